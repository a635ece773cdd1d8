import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { stopped } from './engines.js'

/**
 * src/server.ts in a process of its own, as `npm start` runs it, configured by its
 * environment alone (nothing inherited from the test's): what it prints is what an
 * operator sees, and signals reach it as they would in production.
 */
const running: ChildProcess[] = []

export function startProcess(environment: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    env: { PATH: process.env.PATH, DATA_DIR: 'memory://', PORT: '0', ...environment },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running.push(child)
  const output = { stdout: '', stderr: '' }
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output.stdout += chunk
  })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    output.stderr += chunk
  })
  return { child, output }
}

/** Starts the process and waits for the line that gives its address. */
export async function startedProcess(environment: Record<string, string>) {
  const started = startProcess(environment)
  const { child, output } = started
  const listening = new Promise<string>((resolve) => {
    child.stdout.on('data', () => {
      if (/REST API at .*\n/.test(output.stdout)) resolve('listening')
    })
  })
  const outcome = await Promise.race([listening, once(child, 'exit').then(() => 'exited')])
  if (outcome === 'exited') throw new Error(`the server exited: ${output.stderr}${output.stdout}`)
  const baseUrl = /REST API at (http:\/\/[^\s,]+)/.exec(output.stdout)?.[1] as string
  return { ...started, baseUrl, lines: () => output.stdout.trim().split('\n') }
}

/** Ends every process a suite started and has not stopped itself, all at once. */
export async function stopProcesses() {
  await Promise.all(running.splice(0).map(stopped))
}
