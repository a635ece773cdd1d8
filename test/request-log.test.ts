import Fastify from 'fastify'
import type { LoggerOptions } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { millisecondsText, RequestLog } from '../src/platform/request-log.js'

/** A server that logs a request line, as ours does, into `lines`; the route says `ok`. */
async function serve(logger: LoggerOptions, lines: string[]) {
  const app = Fastify({
    logger: { level: 'info', stream: { write: (line: string) => lines.push(line) }, ...logger },
    logController: new RequestLog(),
  })
  // What pino's generic path writes for the same request, just before the request line.
  app.addHook('onResponse', (request, reply, done) => {
    const line = { reqId: request.id, req: request, res: reply, responseTime: reply.elapsedTime }
    request.server.log.info(line, 'request completed')
    done()
  })
  app.get('/things/:id', async () => ({ ok: true }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  return app
}

const apps: Awaited<ReturnType<typeof serve>>[] = []
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()))
})

async function requestLines(logger: LoggerOptions, headers = {}) {
  const lines: string[] = []
  const app = await serve(logger, lines)
  apps.push(app)
  const { port } = app.server.address() as { port: number }
  await fetch(`http://127.0.0.1:${port}/things/1?q=%22%C3%A9%5C`, { headers })
  const completed = lines.filter((line) => line.includes('"request completed"'))
  expect(completed).toHaveLength(2)
  return completed as [generic: string, written: string]
}

/** The line without what differs between two writes of it: the time and the duration. */
const timeless = (line: string) =>
  line.replace(/"time":\d+/, '"time":0').replace(/"responseTime":[\d.e-]+/, '"responseTime":0')

describe('the request line', () => {
  it('is, byte for byte, what pino writes for the request through its generic path', async () => {
    const [generic, written] = await requestLines({})
    expect(timeless(written)).toBe(timeless(generic))
    expect(JSON.parse(written)).toMatchObject({
      level: 30,
      msg: 'request completed',
      req: { method: 'GET', url: '/things/1?q=%22%C3%A9%5C', host: expect.any(String) },
      res: { statusCode: 200 },
    })
  })

  it('carries what a client sent that needs escaping, and the Accept-Version header', async () => {
    const version = '2 "quoted" \\\tand é'
    const [generic, written] = await requestLines({}, { 'accept-version': version })
    expect(timeless(written)).toBe(timeless(generic))
    expect(JSON.parse(written).req.version).toBe(version)
  })

  it("keeps the logger's level labels, timestamps and bindings", async () => {
    const [generic, written] = await requestLines({
      base: { service: 'catalog' },
      timestamp: () => ',"time":"2026-01-01T00:00:00Z"',
      formatters: { level: (label: string) => ({ severity: label }) },
    })
    expect(written).toBe(
      generic.replace(
        /"responseTime":[\d.e-]+/,
        `"responseTime":${JSON.parse(written).responseTime}`,
      ),
    )
    expect(JSON.parse(written)).toMatchObject({ severity: 'info', service: 'catalog' })
  })

  it('goes through pino when the logger reshapes lines: a formatter, redaction', async () => {
    const [, formatted] = await requestLines({
      formatters: { log: (object: Record<string, unknown>) => ({ ...object, shaped: true }) },
    })
    expect(JSON.parse(formatted).shaped).toBe(true)
    const [, redacted] = await requestLines({ redact: ['req.host'] })
    expect(JSON.parse(redacted).req.host).toBe('[Redacted]')
  })

  it('is not written, and breaks nothing, when the server has no logger', async () => {
    const app = Fastify({ logController: new RequestLog() })
    apps.push(app)
    let afterLine = () => {}
    const lineWritten = new Promise<void>((resolve) => {
      afterLine = resolve
    })
    // Fastify calls the request line after the onResponse hooks: a throw there would be
    // an unhandled rejection, which fails the run.
    app.addHook('onResponse', async () => {
      setImmediate(afterLine)
    })
    app.get('/', async () => ({ ok: true }))
    const response = await app.inject({ method: 'GET', url: '/' })
    expect(response.json()).toEqual({ ok: true })
    await lineWritten
  })

  it('writes the duration to the microsecond, as JSON writes the rounded number', () => {
    const durations = [0, 0.0004, 0.0005, 0.001, 0.01, 0.09, 0.1, 1, 1.05, 1.5, 1.005, 12.345]
    for (let i = 0; i < 1000; i++) durations.push(Math.random() * 10 ** (i % 6))
    for (const milliseconds of durations) {
      const rounded = Math.round(milliseconds * 1000) / 1000
      expect(millisecondsText(milliseconds)).toBe(JSON.stringify(rounded))
    }
  })
})
