import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { graphql } from './helpers/graphql.js'
import { redisUrl } from './helpers/redis.js'
import { freshAccount, startServer, type TestServer } from './helpers/server.js'
import { delayingRelay } from './helpers/tcp-relay.js'

/**
 * Redis that answers, but late: 250 ms each way, as an overloaded host or a congested
 * link. The probe found each read paying several round trips in a row (p50 1 s), and
 * /ready saying ok. Now no request waits on Redis past REDIS_TIMEOUT_MS, and once one
 * command is late none is asked until a PING comes back in time: what the reads send
 * towards Redis, counted at the relay, shows it without timing them.
 */
const backend = backends[0] as (typeof backends)[number]
const ONE_WAY_MS = 250
const READS = 40

describe.runIf(redisUrl)('a Redis that answers slowly', () => {
  let relay: Awaited<ReturnType<typeof delayingRelay>>
  let server: TestServer
  let productId: number

  const read = async (path: string) => {
    const response = await fetch(`${server.baseUrl}${path}`)
    return { body: (await response.json()) as any, response }
  }
  /** The bytes sent towards Redis while `work` runs. */
  const sentToRedisDuring = async (work: () => Promise<unknown>) => {
    const before = relay.bytesToRedis()
    await work()
    return relay.bytesToRedis() - before
  }
  /** READS reads of a product and of a page of the catalog, each answered in full. */
  const reads = async () => {
    for (let count = 0; count < READS; count++) {
      const one = await read(`/products/${productId}`)
      const page = await read('/products?category=slow-redis')
      expect(one.body.data.name).toBe('Lamp')
      expect(page.body.data).toHaveLength(1)
    }
  }
  const readiness = async () => (await read('/ready')).body

  beforeAll(async () => {
    relay = await delayingRelay(redisUrl as string)
    server = await startServer(backend, {
      REDIS_URL: relay.url,
      RATE_LIMIT_MAX: '10000',
      REDIS_TIMEOUT_MS: '100',
    })
    const created = await server.api.post('/products', {
      json: { name: 'Lamp', price: 9.5, category: 'slow-redis', stock: 1 },
      token: (await freshAccount(server, 'admin')).accessToken,
    })
    productId = created.body.data.id
  })
  afterAll(async () => {
    await server?.close()
    await relay?.close()
  })

  it('bounds what it costs a read, says /ready is degraded, and recovers', async () => {
    await expect.poll(readiness, { timeout: 5000 }).toEqual({ data: { status: 'ok' } })
    const healthy = await sentToRedisDuring(reads)

    relay.delay(ONE_WAY_MS)
    // From the first late answer on, the reads stop asking Redis: the few commands sent
    // before it, and the PINGs that test it, are all that goes out.
    const slow = await sentToRedisDuring(reads)
    expect(slow).toBeLessThan(healthy / 4)
    await expect.poll(readiness, { timeout: 5000 }).toEqual({
      data: { status: 'degraded', slow: ['redis'] },
    })
    // A write and its event: the outbox publishes what the request did not wait for.
    const sent = await graphql(
      server.baseUrl,
      'mutation { sendMessage(text: "late", author: "a", chatId: "slow-redis") { id } }',
    )
    expect(sent.body.errors).toBeUndefined()
    expect(sent.body.data.sendMessage.id).toMatch(/^\d+$/)

    relay.delay(0)
    await expect.poll(readiness, { timeout: 5000 }).toEqual({ data: { status: 'ok' } })
    // The budgets are counted again: the remaining count goes down request by request.
    const remaining = async () =>
      Number((await read('/products')).response.headers.get('ratelimit-remaining'))
    const first = await remaining()
    expect(await remaining()).toBe(first - 1)
  })
})
