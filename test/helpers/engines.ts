import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { type AddressInfo, createServer } from 'node:net'

/** Helpers of the suites that start engines of their own (Redis, Sentinel, HAProxy). */

/** A port nothing listens on now, for an engine to take. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo
      probe.close(() => resolve(port))
    })
  })
}

/** Resolves once `ready` holds (a rejection counts as not yet); throws at `timeoutMs`. */
export async function until(ready: () => Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs
  while (!(await ready().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`not ready within ${timeoutMs} ms: ${ready}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

export const isRunning = (child: ChildProcess) =>
  child.exitCode === null && child.signalCode === null

/** Sends SIGTERM, and resolves once the process has exited. */
export async function stopped(child: ChildProcess) {
  if (!isRunning(child)) return
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  await exited
}
