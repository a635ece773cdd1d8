import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { afterAll, describe, expect, it } from 'vitest'

/**
 * src/server.ts in a process of its own, as `npm start` runs it, configured by its
 * environment alone (nothing inherited from this one): what it prints is what
 * `make run` shows.
 */
const running: ChildProcess[] = []

function start(environment: Record<string, string>) {
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

/** The server's output up to and including the line that gives its address. */
async function startedOutput(environment: Record<string, string>) {
  const { child, output } = start(environment)
  const listening = new Promise<string>((resolve) => {
    child.stdout.on('data', () => {
      if (/REST API at .*\n/.test(output.stdout)) resolve('listening')
    })
  })
  const outcome = await Promise.race([listening, once(child, 'exit').then(() => 'exited')])
  if (outcome === 'exited') throw new Error(`the server exited: ${output.stderr}${output.stdout}`)
  return output.stdout.trim().split('\n')
}

afterAll(async () => {
  for (const child of running) {
    if (child.exitCode !== null) continue
    child.kill('SIGTERM')
    await once(child, 'exit')
  }
})

describe('the server process', () => {
  it('logs readable lines in development, and JSON lines when LOG_FORMAT=json', async () => {
    const [pretty, json] = await Promise.all([
      startedOutput({ NODE_ENV: 'development' }),
      startedOutput({ NODE_ENV: 'development', LOG_FORMAT: 'json' }),
    ])
    expect(pretty.some((line) => line.startsWith('{'))).toBe(false)
    expect(pretty).toContainEqual(
      expect.stringMatching(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: REST API at http:\/\/127\.0\.0\.1:/),
    )
    const records = json.map((line) => JSON.parse(line))
    expect(records).toContainEqual(
      expect.objectContaining({ level: 30, msg: expect.stringMatching(/^REST API at /) }),
    )
  }, 60_000)

  it('refuses to start on an invalid LOG_FORMAT, naming it', async () => {
    const { child, output } = start({ LOG_FORMAT: 'yaml' })
    const [code] = await once(child, 'exit')
    expect(code).toBe(1)
    expect(output.stderr).toContain('LOG_FORMAT')
  }, 30_000)
})
