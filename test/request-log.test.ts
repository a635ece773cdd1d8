import Fastify, { type FastifyServerOptions } from 'fastify'
import type { LoggerOptions } from 'pino'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { RequestLog, requestLoggerFactory } from '../src/platform/plugins/request-log.js'

type Line = Record<string, unknown> & { reqId?: string; msg?: string }

/** A server that logs as ours does, into `lines`, listening so that a request has a port. */
async function serve(logger: LoggerOptions, options: FastifyServerOptions = {}) {
  const lines: Line[] = []
  const app = Fastify({
    logger: {
      level: 'info',
      stream: { write: (line: string) => lines.push(JSON.parse(line)) },
      ...logger,
    },
    logController: new RequestLog(),
    childLoggerFactory: requestLoggerFactory,
    ...options,
  })
  apps.push(app)
  app.get('/things/:id', async () => ({ ok: true }))
  app.get('/chatty', async (request) => {
    request.log.info('one')
    request.log.warn('two')
    return { ok: true }
  })
  app.get('/quiet', { logLevel: 'warn' }, async (request) => {
    request.log.info('not written')
    return { ok: true }
  })
  // An error after the answer is the one Fastify hands the request line.
  app.get(
    '/late',
    { onResponse: (_req, _reply, done) => done(new Error('after the answer')) },
    async () => ({ ok: true }),
  )
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const answered = () => lines.filter((line) => line.msg?.startsWith('request ')).length
  const get = async (path: string, headers: Record<string, string> = {}) => {
    const before = answered()
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { headers })
    await response.arrayBuffer()
    // The request line follows the answer's last byte.
    await vi.waitFor(() => expect(answered()).toBe(before + 1))
    return { port }
  }
  return { app, lines, get }
}

const apps: ReturnType<typeof Fastify>[] = []
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()))
})

const requestLines = (lines: Line[]) => lines.filter((line) => line.reqId !== undefined)

describe('the request line', () => {
  it('is one line per request, written when it is answered, with its facts', async () => {
    const { lines, get } = await serve({})
    const { port } = await get('/things/1?q=%22%C3%A9%5C')
    const [line, ...more] = requestLines(lines)
    expect(more).toEqual([])
    expect(line).toEqual({
      level: 30,
      time: expect.any(Number),
      pid: process.pid,
      hostname: expect.any(String),
      reqId: expect.any(String),
      req: {
        method: 'GET',
        url: '/things/1?q=%22%C3%A9%5C',
        host: `127.0.0.1:${port}`,
        remoteAddress: '127.0.0.1',
        remotePort: expect.any(Number),
      },
      res: { statusCode: 200 },
      responseTime: expect.any(Number),
      msg: 'request completed',
    })
  })

  it('gives the duration in milliseconds to the microsecond', async () => {
    const { lines, get } = await serve({})
    await get('/things/1')
    const { responseTime } = requestLines(lines)[0] as { responseTime: number }
    expect(responseTime).toBeGreaterThan(0)
    expect(Math.round(responseTime * 1000) / 1000).toBe(responseTime)
  })

  it('carries what a client sent that needs escaping, and the Accept-Version header', async () => {
    const version = '2 "quoted" \\\tand é'
    const { lines, get } = await serve({})
    await get('/things/%22%5C', { 'accept-version': version })
    expect(requestLines(lines)[0]?.req).toMatchObject({ url: '/things/%22%5C', version })
  })

  it('is written at error level, with the error, when Fastify hands it one', async () => {
    const { lines, get } = await serve({})
    await get('/late')
    expect(requestLines(lines)).toEqual([
      expect.objectContaining({
        level: 50,
        msg: 'request errored',
        req: expect.objectContaining({ method: 'GET', url: '/late' }),
        res: { statusCode: 200 },
        responseTime: expect.any(Number),
        err: expect.objectContaining({ type: 'Error', message: 'after the answer' }),
      }),
    ])
  })

  it("keeps the logger's level labels, timestamps and bindings", async () => {
    const { lines, get } = await serve({
      base: { service: 'catalog' },
      timestamp: () => ',"time":"2026-01-01T00:00:00Z"',
      formatters: { level: (label: string) => ({ severity: label }) },
    })
    await get('/things/1')
    expect(requestLines(lines)[0]).toMatchObject({
      severity: 'info',
      time: '2026-01-01T00:00:00Z',
      service: 'catalog',
      msg: 'request completed',
    })
  })

  it("goes through the logger's formatters, redaction and mixin", async () => {
    const { lines, get } = await serve({
      formatters: { log: (object: Record<string, unknown>) => ({ ...object, shaped: true }) },
      redact: ['req.host'],
      // What tracing will add to every line.
      mixin: () => ({ trace_id: 'a1', span_id: 'b2' }),
    })
    await get('/things/1')
    expect(requestLines(lines)[0]).toMatchObject({
      shaped: true,
      req: { host: '[Redacted]' },
      trace_id: 'a1',
      span_id: 'b2',
    })
  })

  it('is not written, and breaks nothing, when the server has no logger', async () => {
    const app = Fastify({
      logController: new RequestLog(),
      childLoggerFactory: requestLoggerFactory,
    })
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
})

describe("a request's own logger", () => {
  it('is made when the request first logs, once, with the request id', async () => {
    const { app, lines, get } = await serve({})
    const child = vi.spyOn(app.log, 'child')
    await get('/things/1')
    expect(child).not.toHaveBeenCalled()
    await get('/chatty')
    expect(child).toHaveBeenCalledTimes(1)
    const chatty = lines.filter((line) => line.msg === 'one' || line.msg === 'two')
    const completed = lines.findLast((line) => line.msg === 'request completed')
    expect(chatty).toMatchObject([
      { level: 30, reqId: completed?.reqId },
      { level: 40, reqId: completed?.reqId },
    ])
  })

  it("keeps a route's own log level", async () => {
    const { lines, get } = await serve({})
    await get('/quiet')
    expect(lines.some((line) => line.msg === 'not written')).toBe(false)
  })
})
