import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { graphql, wsUrl } from './helpers/graphql.js'
import { openRawSocket, TRANSPORT_WS } from './helpers/raw-socket.js'
import { redisRelay, redisUrl } from './helpers/redis.js'
import { freshAccount, startServer, type TestServer } from './helpers/server.js'

/**
 * With REDIS_URL the rate-limit budgets live in Redis: instances behind one balancer
 * draw on one budget per caller. The budgets of this file live under a prefix of its own,
 * so no other suite on the same Redis counts against them.
 */
describe.runIf(redisUrl).each(backends)('rate limits shared through Redis on $name', (backend) => {
  let relay: Awaited<ReturnType<typeof redisRelay>>
  let first: TestServer
  let second: TestServer

  beforeAll(async () => {
    relay = await redisRelay(redisUrl as string)
    const environment = {
      REDIS_URL: relay.url,
      REDIS_KEY_PREFIX: `test-${randomBytes(6).toString('hex')}:`,
      RATE_LIMIT_MAX: '5',
      RATE_LIMIT_WINDOW: '60000',
    }
    first = await startServer(backend, environment)
    second = await startServer(backend, environment, { testDatabase: first.testDatabase })
  })
  afterAll(async () => {
    await second?.close()
    await first?.close()
    await relay?.close()
  })

  it('answers 429 to the sixth request of one caller spread over two instances', async () => {
    const statuses: number[] = []
    const remaining: (string | null)[] = []
    for (let request = 0; request < 6; request += 1) {
      const instance = request % 2 === 0 ? first : second
      const response = await instance.api.get('/products')
      statuses.push(response.status)
      remaining.push(response.headers.get('ratelimit-remaining'))
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429])
    expect(remaining).toEqual(['4', '3', '2', '1', '0', '0'])
  })

  it('counts a user’s GraphQL operations over a WebSocket with their requests to the other instance', async () => {
    const { accessToken: token } = await freshAccount(first)
    // The upgrade request carries the token: it is the first of the user's 5, on `first`.
    const socket = await openRawSocket(wsUrl(first.baseUrl), TRANSPORT_WS, {
      headers: { authorization: `Bearer ${token}` },
    })
    try {
      socket.send({ type: 'connection_init' })
      expect(await socket.next()).toEqual({ type: 'connection_ack' })
      for (let request = 0; request < 2; request += 1) {
        const response = await graphql(second.baseUrl, '{ messages(limit: 1) { id } }', {}, token)
        expect(response.status).toBe(200)
      }
      for (const id of ['q1', 'q2', 'q3']) {
        socket.send({ id, type: 'subscribe', payload: { query: '{ messages(limit: 1) { id } }' } })
      }
      const firstFrames = new Map<string, string>()
      while (firstFrames.size < 3) {
        const frame = await socket.next()
        if (!firstFrames.has(frame.id)) firstFrames.set(frame.id, frame.type)
      }
      expect([...firstFrames.values()].sort()).toEqual(['error', 'next', 'next'])
    } finally {
      socket.ws.terminate()
    }
  })

  it('serves requests uncounted while Redis is away, and counts again when it is back', async () => {
    await relay.cut()
    await expect.poll(async () => (await first.api.get('/ready')).status).toBe(503)
    // The budget is spent, yet the limiter cannot count: requests go through.
    for (let request = 0; request < 3; request += 1) {
      expect((await second.api.get('/products')).status).toBe(200)
    }
    await relay.restore()
    await expect
      .poll(async () => (await first.api.get('/ready')).status, { timeout: 15_000 })
      .toBe(200)
    expect((await first.api.get('/products')).status).toBe(429)
  }, 40_000)
})
