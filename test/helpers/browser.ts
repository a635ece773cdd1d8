import { type Browser, chromium } from 'playwright-core'

// Debian's Chromium (`make test` installs it); Playwright's own download cannot work here.
const CHROMIUM = '/usr/bin/chromium'
// No background traffic: this machine reaches nothing beyond 127.0.0.1.
const QUIET = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

/** A headless Chromium that asks nothing of the network but what its pages load. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: QUIET })
}
