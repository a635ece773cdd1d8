import { randomUUID } from 'node:crypto'
import { connect } from 'node:net'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { notFound, withoutStacks } from '../src/platform/errors.js'
import { backends } from './helpers/backends.js'
import { ADMIN, login, startServer, type TestServer } from './helpers/server.js'

const signUp = { name: 'Ann', email: 'ann@example.com', password: 'password-1' }

describe.each(backends)('errors on $name', (backend) => {
  let server: TestServer
  let token: string
  const logLines: string[] = []

  beforeAll(async () => {
    server = await startServer(
      backend,
      {},
      { logger: { level: 'info', stream: { write: (line: string) => logLines.push(line) } } },
    )
    token = (await login(server.api, ADMIN)).accessToken
  })
  afterAll(() => server?.close())

  const jsonHeaders = { 'content-type': 'application/json' }

  it('answers malformed JSON with 400 BAD_REQUEST and stores nothing', async () => {
    const response = await server.api.post('/users', {
      raw: '{"name": "Ann",',
      headers: jsonHeaders,
    })
    expect(response.status).toBe(400)
    expect(response.body.error).toEqual({ code: 'BAD_REQUEST', message: expect.any(String) })
    expect((await server.api.post('/users', { json: signUp })).status).toBe(201)
  })

  it('refuses a body that would poison a prototype, says why, and stores nothing', async () => {
    const poisoned = { ...signUp, email: 'poison@example.com' }
    const poisons = [
      '"__proto__": {"admin": true}',
      '"constructor": {"prototype": {"admin": true}}',
    ]
    for (const poison of poisons) {
      const response = await server.api.post('/users', {
        raw: `${JSON.stringify(poisoned).slice(0, -1)}, ${poison}}`,
        headers: jsonHeaders,
      })
      expect(response.status).toBe(400)
      expect(response.body.error).toEqual({
        code: 'BAD_REQUEST',
        message: expect.stringContaining('__proto__ or constructor.prototype'),
      })
    }
    expect((await server.api.post('/users', { json: poisoned })).status).toBe(201)
  })

  it('answers an empty JSON body with 400 BAD_REQUEST', async () => {
    const response = await server.api.post('/products', { raw: '', headers: jsonHeaders, token })
    expect(response.status).toBe(400)
    expect(response.body.error.code).toBe('BAD_REQUEST')
  })

  it('answers a body that is not JSON with 415', async () => {
    const response = await server.api.post('/products', {
      raw: 'name=Lamp',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      token,
    })
    expect(response.status).toBe(415)
    expect(response.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE')
  })

  it('answers a body over the limit with 413', async () => {
    const response = await server.api.post('/users', {
      json: { ...signUp, name: 'x'.repeat(2 * 1024 * 1024) },
    })
    expect(response.status).toBe(413)
    expect(response.body.error.code).toBe('PAYLOAD_TOO_LARGE')
  })

  it('logs one line per request, when answered, with its method, path, status and id', async () => {
    const path = `/products/999999?probe=${randomUUID()}`
    const response = await server.api.get(path)
    expect(response.status).toBe(404)
    const lines = logLines.map((line) => JSON.parse(line)).filter((line) => line.req?.url === path)
    expect(lines).toEqual([
      expect.objectContaining({
        msg: 'request completed',
        reqId: response.headers.get('x-request-id'),
        req: expect.objectContaining({ method: 'GET', url: path }),
        res: { statusCode: 404 },
        responseTime: expect.any(Number),
      }),
    ])
  })

  it('logs a client that goes away mid-body at info, not as a failure of the server', async () => {
    const requestId = randomUUID()
    const { hostname, port } = new URL(server.baseUrl)
    const socket = connect(Number(port), hostname, () => {
      socket.write(
        `POST /users HTTP/1.1\r\nHost: x\r\nX-Request-Id: ${requestId}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":',
      )
    })
    // Its first bytes are read, then it is gone, as a stalled client is once a timeout cuts it.
    await new Promise((resolve) => setTimeout(resolve, 100))
    socket.destroy()
    const entries = () =>
      logLines.map((line) => JSON.parse(line)).filter((line) => line.reqId === requestId)
    await vi.waitFor(() => expect(entries()).not.toEqual([]))
    expect(entries()).toEqual([
      expect.objectContaining({ level: 30, msg: 'the client went away mid-request' }),
    ])
  })

  it('answers an unknown route with 404 in the envelope', async () => {
    const response = await server.api.get('/nowhere')
    expect(response.status).toBe(404)
    expect(response.body.error.code).toBe('NOT_FOUND')
  })

  it('honours a UUID x-request-id and replaces anything else', async () => {
    const id = randomUUID()
    const honoured = await server.api.get('/health', { headers: { 'x-request-id': id } })
    expect(honoured.headers.get('x-request-id')).toBe(id)
    const replaced = await server.api.get('/health', { headers: { 'x-request-id': 'not-a-uuid' } })
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
  })

  // Last: it breaks the database under the server.
  it('answers an unexpected failure with 500 INTERNAL, hides it, and logs it', async () => {
    await server.testDatabase.database.db.execute(sql`drop table products cascade`)
    const requestId = randomUUID()
    const response = await server.api.get('/products', { headers: { 'x-request-id': requestId } })
    expect(response.status).toBe(500)
    expect(response.body).toEqual({ error: { code: 'INTERNAL', message: 'Internal server error' } })
    expect(response.text).not.toMatch(/products|relation|select/i)
    const logged = logLines.map((line) => JSON.parse(line)).find((entry) => entry.level === 50)
    expect(logged).toMatchObject({ reqId: requestId, msg: 'request failed' })
    expect(JSON.stringify(logged.err)).toMatch(/products/)
  })
})

describe.each(backends)('secrets in the logs on $name', (backend) => {
  it('keeps the password and its hash out of the log of a failing sign-up', async () => {
    const logLines: string[] = []
    const server = await startServer(
      backend,
      {},
      { logger: { level: 'info', stream: { write: (line: string) => logLines.push(line) } } },
    )
    try {
      // Sign-up fails after hashing: the INSERT that carries the hash is what fails.
      await server.testDatabase.database.db.execute(sql`drop table users cascade`)
      const password = 'a-secret-password-9'
      const requestId = randomUUID()
      const response = await server.api.post('/users', {
        json: { name: 'Leaky', email: 'leaky@example.com', password },
        headers: { 'x-request-id': requestId },
      })
      expect(response.status).toBe(500)
      const log = logLines.join('\n')
      const failure = logLines.map((line) => JSON.parse(line)).find((entry) => entry.level === 50)
      // Still useful to an operator: the request, the statement and the driver's reason.
      expect(failure).toMatchObject({ reqId: requestId, msg: 'request failed' })
      expect(failure.err).toMatchObject({
        statement: expect.stringMatching(/^insert into "users"/),
        message: expect.stringMatching(/users/),
      })
      expect(log).not.toContain(password)
      expect(log).not.toMatch(/scrypt\$/)
    } finally {
      await server.close()
    }
  })
})

describe('errors that are answers', () => {
  it('records no stack for what withoutStacks runs, and puts the limit back after a throw', () => {
    const limit = Error.stackTraceLimit
    const thrown = (() => {
      try {
        return withoutStacks(() => {
          throw new Error('forged')
        })
      } catch (error) {
        return error as Error
      }
    })()
    expect(thrown.message).toBe('forged')
    expect(thrown.stack?.split('\n')).toEqual(['Error: forged'])
    expect(Error.stackTraceLimit).toBe(limit)
    expect(new Error('a fault').stack?.split('\n').length).toBeGreaterThan(1)
  })

  it('makes AppErrors without a stack, and Errors all the same', () => {
    const error = notFound('No product 7')
    expect(error).toBeInstanceOf(Error)
    expect(error.stack?.split('\n')).toEqual(['AppError: No product 7'])
    expect(error).toMatchObject({ name: 'AppError', message: 'No product 7', statusCode: 404 })
    expect(String(error)).toBe('AppError: No product 7')
    expect(() => {
      throw error
    }).toThrow(Error)
  })
})
