import type { Client } from 'graphql-ws'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { collect, subscriptionsActive, wsClient } from './helpers/graphql.js'
import { redisUrl } from './helpers/redis.js'
import { ADMIN, freshAccount, login, startServer, type TestServer } from './helpers/server.js'

/**
 * Live figures: GET /metrics in the Prometheus text format (an admin or METRICS_TOKEN,
 * never rate-limited), and metricsUpdated every METRICS_INTERVAL_MS, admins only.
 */

const METRICS_TOKEN = 'a-metrics-token-for-scrapers'
const METRICS_UPDATED = `subscription {
  metricsUpdated {
    instanceId timestamp uptimeSeconds requestsPerSecond activeSubscriptions
    connectedClients heapUsedBytes eventLoopDelayMs
  }
}`

interface Figures {
  instanceId: string
  timestamp: string
  uptimeSeconds: number
  requestsPerSecond: number
  activeSubscriptions: number
  connectedClients: number
  heapUsedBytes: number
  eventLoopDelayMs: number
}

/** The value of one sample line of a Prometheus text, or undefined when absent. */
const sampleOf = (text: string, sample: string) => {
  const line = text.split('\n').find((each) => each.startsWith(`${sample} `))
  return line === undefined ? undefined : Number(line.slice(sample.length + 1))
}

describe.each(backends)('metrics on $name', (backend) => {
  let server: TestServer
  let admin: string
  let user: string
  const clients: Client[] = []
  const scrape = (token?: string) => server.api.get('/metrics', token ? { token } : {})

  beforeAll(async () => {
    server = await startServer(backend, { METRICS_TOKEN, METRICS_INTERVAL_MS: '200' })
    admin = (await login(server.api, ADMIN)).accessToken
    user = (await freshAccount(server)).accessToken
  })
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.dispose()))
    await expect.poll(() => server.events.activeSubscriptions()).toBe(0)
  })
  afterAll(() => server?.close())

  describe('GET /metrics', () => {
    it("answers an admin's token and METRICS_TOKEN in the Prometheus text format", async () => {
      for (const token of [admin, METRICS_TOKEN]) {
        const response = await scrape(token)
        expect(response.status).toBe(200)
        expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
        for (const name of [
          'api_requests_per_second',
          'api_active_subscriptions',
          'api_connected_clients',
          'api_event_loop_delay_ms',
          'api_uptime_seconds',
          'process_resident_memory_bytes',
          'nodejs_heap_size_used_bytes',
          'http_request_duration_seconds_bucket',
        ]) {
          expect(response.text).toContain(`\n${name}`)
        }
      }
    })

    it('refuses no token or a wrong one (401), and a user (403)', async () => {
      expect((await scrape()).status).toBe(401)
      expect((await scrape('not-the-metrics-token-at-all')).status).toBe(401)
      const forbidden = await scrape(user)
      expect(forbidden.status).toBe(403)
      expect(forbidden.body.error.code).toBe('FORBIDDEN')
    })

    it('times each request by its route pattern and status', async () => {
      const sample =
        'http_request_duration_seconds_count{method="GET",route="/products/:id",status_code="404"}'
      const before = sampleOf((await scrape(admin)).text, sample) ?? 0
      expect((await server.api.get('/products/999999')).status).toBe(404)
      const after = sampleOf((await scrape(admin)).text, sample)
      expect(after).toBe(before + 1)
    })
  })

  describe('metricsUpdated', () => {
    it('gives an admin the figures of the instance every interval, measured', async () => {
      const client = wsClient(server.baseUrl, { authToken: admin })
      clients.push(client)
      const figures = collect<{ metricsUpdated: Figures }>(client, METRICS_UPDATED)
      await subscriptionsActive(server.events, 1)
      const [first, second] = (await figures.until(2)).map((item) => item.metricsUpdated)
      expect(first).toMatchObject({
        instanceId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        uptimeSeconds: expect.any(Number),
        heapUsedBytes: expect.any(Number),
      })
      expect(second?.instanceId).toBe(first?.instanceId)
      expect(Date.parse(second?.timestamp ?? '')).toBeGreaterThan(
        Date.parse(first?.timestamp ?? ''),
      )
      expect(first?.heapUsedBytes).toBeGreaterThan(1_000_000)
      expect(first?.uptimeSeconds).toBeGreaterThan(0)
      expect(first?.eventLoopDelayMs).toBeGreaterThanOrEqual(0)
      // Its own socket and subscription are among those counted.
      expect(first?.connectedClients).toBeGreaterThanOrEqual(1)
      expect(first?.activeSubscriptions).toBeGreaterThanOrEqual(1)
    })

    it('measures requests per second over the last 10 s', async () => {
      const client = wsClient(server.baseUrl, { authToken: admin })
      clients.push(client)
      const figures = collect<{ metricsUpdated: Figures }>(client, METRICS_UPDATED)
      await subscriptionsActive(server.events, 1)
      await Promise.all(Array.from({ length: 40 }, () => server.api.get('/health')))
      // 40 requests (and a few scrapes) in the window: about 4 per second.
      await expect
        .poll(() => figures.items.at(-1)?.metricsUpdated.requestsPerSecond ?? 0, { timeout: 5000 })
        .toBeGreaterThanOrEqual(4)
    })

    it('counts open WebSockets as connected clients', async () => {
      const watcher = wsClient(server.baseUrl, { authToken: admin })
      clients.push(watcher)
      const figures = collect<{ metricsUpdated: Figures }>(watcher, METRICS_UPDATED)
      await subscriptionsActive(server.events, 1)
      const connected = () => figures.items.at(-1)?.metricsUpdated.connectedClients ?? 0
      await expect.poll(connected, { timeout: 5000 }).toBeGreaterThanOrEqual(1)
      const base = connected()
      for (let index = 0; index < 3; index += 1) {
        const client = wsClient(server.baseUrl)
        clients.push(client)
        await new Promise<void>((resolve) => client.on('connected', () => resolve()))
      }
      await expect.poll(connected, { timeout: 5000 }).toBe(base + 3)
    })

    it('refuses a user (FORBIDDEN) and an anonymous caller (UNAUTHENTICATED), delivering nothing', async () => {
      for (const [token, code] of [
        [user, 'FORBIDDEN'],
        [undefined, 'UNAUTHENTICATED'],
      ] as const) {
        const client = wsClient(server.baseUrl, token ? { authToken: token } : undefined)
        clients.push(client)
        const codes: unknown[][] = []
        client.subscribe(
          { query: METRICS_UPDATED },
          {
            next: (answer) => codes.push((answer.errors ?? []).map((e) => e.extensions?.code)),
            error: () => {},
            complete: () => {},
          },
        )
        await expect.poll(() => codes.length).toBe(1)
        expect(codes).toEqual([[code]])
      }
      expect(server.events.activeSubscriptions()).toBe(0)
    })
  })
})

describe.runIf(redisUrl).each(backends)('metrics of two instances on $name', (backend) => {
  let first: TestServer
  let second: TestServer

  beforeAll(async () => {
    const environment = { REDIS_URL: redisUrl as string, METRICS_INTERVAL_MS: '200' }
    first = await startServer(backend, environment)
    second = await startServer(backend, environment, { testDatabase: first.testDatabase })
  })
  afterAll(async () => {
    await second?.close()
    await first?.close()
  })

  it('gives an admin on one instance the figures of both, through Redis', async () => {
    const admin = (await login(first.api, ADMIN)).accessToken
    const client = wsClient(first.baseUrl, { authToken: admin })
    const figures = collect<{ metricsUpdated: Figures }>(client, METRICS_UPDATED)
    await subscriptionsActive(first.events, 1)
    const instances = () => new Set(figures.items.map((item) => item.metricsUpdated.instanceId))
    await expect.poll(() => instances().size, { timeout: 5000 }).toBe(2)
    figures.dispose()
    await client.dispose()
  })
})

describe.each(backends)('GET /metrics under a rate limit on $name', (backend) => {
  let server: TestServer
  beforeAll(async () => {
    // A budget of two requests a window: scrapes must not draw on it.
    server = await startServer(backend, { METRICS_TOKEN, RATE_LIMIT_MAX: '2' })
  })
  afterAll(() => server?.close())

  it('is never rate-limited: scrapes past the budget all answer, without RateLimit headers', async () => {
    const scrapes = await Promise.all(
      Array.from({ length: 10 }, () => server.api.get('/metrics', { token: METRICS_TOKEN })),
    )
    expect(scrapes.map((response) => response.status)).toEqual(Array(10).fill(200))
    expect(scrapes.every((response) => !response.headers.has('ratelimit-limit'))).toBe(true)
    // The budget is still there for everything else.
    const limited = await Promise.all(Array.from({ length: 3 }, () => server.api.get('/products')))
    expect(limited.map((response) => response.status)).toContain(429)
  })
})
