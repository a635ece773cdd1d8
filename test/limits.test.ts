import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { products } from '../src/db/schema.js'
import { backends } from './helpers/backends.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'

describe.each(backends)('rate limits on $name', (backend) => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer(backend, { RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW: '60000' })
  })
  afterAll(() => server?.close())

  it('counts down in RateLimit-* headers, then answers 429 with Retry-After', async () => {
    const remaining: (string | null)[] = []
    for (let request = 0; request < 3; request += 1) {
      const response = await server.api.get('/products')
      expect(response.status).toBe(200)
      expect(response.headers.get('ratelimit-limit')).toBe('3')
      remaining.push(response.headers.get('ratelimit-remaining'))
    }
    expect(remaining).toEqual(['2', '1', '0'])
    const limited = await server.api.get('/products')
    expect(limited.status).toBe(429)
    expect(limited.body.error.code).toBe('RATE_LIMITED')
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
  })

  it('neither limits nor counts the probes', async () => {
    for (let request = 0; request < 5; request += 1) {
      for (const probe of ['/health', '/ready']) {
        const response = await server.api.get(probe)
        expect(response.status).toBe(200)
        expect(response.headers.get('ratelimit-limit')).toBeNull()
      }
    }
  })

  it('counts an authenticated caller by user, not by address', async () => {
    // The address is spent by the first test; users have windows of their own.
    const other = await startServer(backend, { RATE_LIMIT_MAX: '3' })
    try {
      const first = await newUser(other.api)
      const second = await login(other.api, ADMIN)
      for (let request = 0; request < 3; request += 1) {
        expect((await other.api.get('/products', { token: first.accessToken })).status).toBe(200)
      }
      expect((await other.api.get('/products', { token: first.accessToken })).status).toBe(429)
      expect((await other.api.get('/products', { token: second.accessToken })).status).toBe(200)
    } finally {
      await other.close()
    }
  })
})

// Only addresses matter here, not storage: one backend is enough.
describe.each(backends.slice(0, 1))('callers behind a proxy ($name)', (backend) => {
  // These requests come from 127.0.0.1, which plays the proxy.
  const from = (forwardedFor: string) => ({ headers: { 'x-forwarded-for': forwardedFor } })

  /** A server allowing two requests per caller, and the addresses its request logs show. */
  async function startBehindProxy(environment: Record<string, string>) {
    const logLines: string[] = []
    const stream = { write: (line: string) => logLines.push(line) }
    const server = await startServer(
      backend,
      { RATE_LIMIT_MAX: '2', ...environment },
      { logger: { level: 'info', stream } },
    )
    const loggedAddresses = () =>
      logLines.map((line) => JSON.parse(line).req?.remoteAddress).filter(Boolean)
    return { server, loggedAddresses }
  }

  it('gives each forwarded client a budget of its own when TRUST_PROXY names the proxy', async () => {
    const { server, loggedAddresses } = await startBehindProxy({ TRUST_PROXY: '127.0.0.1' })
    try {
      for (let request = 0; request < 2; request += 1) {
        expect((await server.api.get('/products', from('203.0.113.1'))).status).toBe(200)
      }
      expect((await server.api.get('/products', from('203.0.113.1'))).status).toBe(429)
      expect((await server.api.get('/products', from('203.0.113.2'))).status).toBe(200)
      expect(loggedAddresses()).toEqual([
        '203.0.113.1',
        '203.0.113.1',
        '203.0.113.1',
        '203.0.113.2',
      ])
    } finally {
      await server.close()
    }
  })

  it('takes the nearest untrusted address, so a client cannot forge its own', async () => {
    const { server, loggedAddresses } = await startBehindProxy({
      TRUST_PROXY: '127.0.0.1, 10.0.0.0/8',
    })
    try {
      // The client wrote 192.0.2.9 itself; a proxy at 10.1.2.3 added the address it saw.
      await server.api.get('/products', from('192.0.2.9, 198.51.100.7, 10.1.2.3'))
      expect(loggedAddresses()).toEqual(['198.51.100.7'])
    } finally {
      await server.close()
    }
  })

  it('counts every caller as the proxy itself when no proxy is trusted', async () => {
    const { server, loggedAddresses } = await startBehindProxy({})
    try {
      for (let request = 0; request < 2; request += 1) {
        expect((await server.api.get('/products', from('203.0.113.1'))).status).toBe(200)
      }
      expect((await server.api.get('/products', from('203.0.113.2'))).status).toBe(429)
      expect(new Set(loggedAddresses())).toEqual(new Set(['127.0.0.1']))
    } finally {
      await server.close()
    }
  })
})

describe.each(backends)('maintenance mode on $name', (backend) => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer(backend, { MAINTENANCE_MODE: 'true' })
  })
  afterAll(() => server?.close())

  it('answers 503 UNAVAILABLE with Retry-After, and stores nothing', async () => {
    const write = await server.api.post('/products', {
      json: { name: 'Lamp', price: 10, category: 'lighting' },
    })
    expect(write.status).toBe(503)
    expect(write.body.error.code).toBe('UNAVAILABLE')
    expect(write.headers.get('retry-after')).toBe('60')
    expect((await server.api.get('/products')).status).toBe(503)
    expect(await server.testDatabase.database.db.select().from(products)).toEqual([])
  })

  it('answers GraphQL 503 UNAVAILABLE with Retry-After too, in the GraphQL error shape', async () => {
    const response = await fetch(`${server.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ messages { id } }' }),
    })
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('60')
    expect(await response.json()).toEqual({
      errors: [{ message: expect.any(String), extensions: { code: 'UNAVAILABLE' } }],
    })
  })

  it('keeps the probes answering', async () => {
    expect((await server.api.get('/health')).status).toBe(200)
    expect((await server.api.get('/ready')).status).toBe(200)
  })
})

describe.each(backends)('login and sign-up budgets on $name', (backend) => {
  let server: TestServer
  // 127.0.0.1 plays a trusted proxy, so each test can speak from addresses of its own.
  const from = (address: string) => ({ 'x-forwarded-for': address })
  const wrongPassword = (email: string, address: string, token?: string) =>
    server.api.post('/auth/login', {
      json: { email, password: 'not-the-password' },
      headers: from(address),
      ...(token && { token }),
    })

  beforeAll(async () => {
    server = await startServer(backend, {
      RATE_LIMIT_MAX: '1000',
      AUTH_RATE_LIMIT_MAX: '3',
      TRUST_PROXY: '127.0.0.1',
    })
  })
  afterAll(() => server?.close())

  function expectLimited(response: Awaited<ReturnType<typeof wrongPassword>>) {
    expect(response.status).toBe(429)
    expect(response.body.error.code).toBe('RATE_LIMITED')
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0)
  }

  it('limits guesses at one account, however many addresses they come from', async () => {
    const target = 'target-of-many@example.com'
    for (const address of ['198.51.100.1', '198.51.100.2', '198.51.100.3']) {
      expect((await wrongPassword(target, address)).status).toBe(401)
    }
    expectLimited(await wrongPassword(target, '198.51.100.4'))
    // Other accounts are not held back by it.
    expect((await wrongPassword('someone-else@example.com', '198.51.100.4')).status).toBe(401)
  })

  it('limits one address, whatever valid tokens it attaches', async () => {
    const tokens = [
      (await login(server.api, ADMIN)).accessToken,
      ...(await Promise.all([newUser(server.api), newUser(server.api)])).map(
        (user) => user.accessToken,
      ),
    ]
    const address = '203.0.113.77'
    for (const [index, token] of tokens.entries()) {
      expect((await wrongPassword(`victim${index}@example.com`, address, token)).status).toBe(401)
    }
    expectLimited(await wrongPassword('victim9@example.com', address, tokens[0]))
  })

  it('limits sign-ups from one address, storing nothing past the limit', async () => {
    const address = '203.0.113.88'
    const account = (index: number) => ({
      name: 'Many',
      email: `many${index}-${Date.now()}@example.com`,
      password: 'pass-word-1',
    })
    const signUp = (body: object) =>
      server.api.post('/users', { json: body, headers: from(address) })
    for (let index = 0; index < 3; index += 1) {
      expect((await signUp(account(index))).status).toBe(201)
    }
    const refused = account(3)
    expectLimited(await signUp(refused))
    const attempt = await server.api.post('/auth/login', {
      json: { email: refused.email, password: refused.password },
      headers: from('192.0.2.200'),
    })
    expect(attempt.status).toBe(401)
  })
})
