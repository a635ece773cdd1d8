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
