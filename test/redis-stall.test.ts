import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { graphql } from './helpers/graphql.js'
import { redisRelay, redisUrl } from './helpers/redis.js'
import { freshAccount, startServer, type TestServer } from './helpers/server.js'

/**
 * Redis gone silent (a stopped process, a host that drops packets): it answers nothing
 * and closes nothing. The rate limiter, the read cache and the publisher all ask it
 * something, and without a watch each request waited on it for as long as the silence
 * lasted. Now the first requests wait a second at most, the rest not at all, and every
 * answer is right: the stores fail open and the cache reads from the database.
 */
const backend = backends[0] as (typeof backends)[number]
/** Longer than any wait the service allows itself; a request that hangs fails here. */
const HANG_MS = 10_000

describe.runIf(redisUrl)('a Redis that goes silent', () => {
  let relay: Awaited<ReturnType<typeof redisRelay>>
  let server: TestServer
  let admin: string
  const product = (name: string) => ({ name, price: 9.5, category: 'stall', stock: 1 })
  const answered = async (path: string, init: RequestInit = {}) => {
    const response = await fetch(`${server.baseUrl}${path}`, {
      ...init,
      signal: AbortSignal.timeout(HANG_MS),
    })
    return { status: response.status, body: (await response.json()) as any }
  }

  beforeAll(async () => {
    relay = await redisRelay(redisUrl as string)
    server = await startServer(backend, {
      REDIS_URL: relay.url,
      // The limiter's counters live in Redis too; every test request is well within this.
      RATE_LIMIT_MAX: '10000',
      CACHE_TTL_SECONDS: '2',
    })
    admin = (await freshAccount(server, 'admin')).accessToken
  })
  afterAll(async () => {
    await relay?.restore()
    await server?.close()
    await relay?.close()
  })

  it('answers reads, writes and GraphQL from the database, and serves the cache again once Redis answers', async () => {
    const before = await server.api.post('/products', { json: product('Before'), token: admin })
    expect(before.status).toBe(201)
    const id = before.body.data.id as number
    expect((await answered(`/products/${id}`)).body.data.name).toBe('Before')
    expect((await answered('/products?category=stall')).body.data).toHaveLength(1)

    relay.stall()
    expect((await answered(`/products/${id}`)).body.data.name).toBe('Before')
    const created = await answered('/products', {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify(product('During')),
    })
    expect(created.status).toBe(201)
    const list = await answered('/products?category=stall')
    expect(list.body.data.map((each: { name: string }) => each.name)).toEqual(['During', 'Before'])
    const messages = await graphql(server.baseUrl, '{ messages(limit: 1) { id } }')
    expect(messages.body.errors).toBeUndefined()
    // Stored and answered; its event is the outbox's to publish once Redis answers.
    const sent = await graphql(
      server.baseUrl,
      'mutation { sendMessage(text: "during", author: "a", chatId: "stall") { text } }',
    )
    expect(sent.body).toEqual({ data: { sendMessage: { text: 'during' } } })
    expect((await answered('/ready')).status).toBe(503)

    await relay.restore()
    await expect.poll(async () => (await answered('/ready')).status, { timeout: 10_000 }).toBe(200)
    // What the lost invalidation left is stale for the cache's TTL at most.
    await expect
      .poll(async () => (await answered('/products?category=stall')).body.data.length, {
        timeout: 5_000,
      })
      .toBe(2)
    expect(server.redis?.commands.status).toBe('ready')
  })
})
