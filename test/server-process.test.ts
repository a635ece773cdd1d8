import { once } from 'node:events'
import { afterAll, describe, expect, it } from 'vitest'
import { startedProcess, startProcess, stopProcesses } from './helpers/server-process.js'

// What the server prints is what `make run` shows.
const linesOf = async (environment: Record<string, string>) =>
  (await startedProcess(environment)).lines()

afterAll(stopProcesses)

describe('the server process', () => {
  it('logs readable lines in development, and JSON lines when LOG_FORMAT=json', async () => {
    const [pretty, json] = await Promise.all([
      linesOf({ NODE_ENV: 'development' }),
      linesOf({ NODE_ENV: 'development', LOG_FORMAT: 'json' }),
    ])
    expect(pretty.some((line) => line.startsWith('{'))).toBe(false)
    expect(pretty).toContainEqual(
      expect.stringMatching(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: REST API at http:\/\/127\.0\.0\.1:/),
    )
    const records = json.map((line) => JSON.parse(line))
    expect(records).toContainEqual(
      expect.objectContaining({ level: 30, msg: expect.stringMatching(/^REST API at /) }),
    )
  })

  it('refuses to start on an invalid LOG_FORMAT, naming it', async () => {
    const { child, output } = startProcess({ LOG_FORMAT: 'yaml' })
    const [code] = await once(child, 'exit')
    expect(code).toBe(1)
    expect(output.stderr).toContain('LOG_FORMAT')
  }, 30_000)
})
