import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { graphql } from './helpers/graphql.js'
import { rawSubscription, TRANSPORT_WS } from './helpers/raw-subscription.js'
import { type RelayedDatabase, relayedDatabase } from './helpers/relayed-database.js'
import { ADMIN, login, startServer, type TestServer } from './helpers/server.js'
import type { TcpRelay } from './helpers/tcp-relay.js'

/**
 * Postgres behind a relay that the test cuts (a crash) or stalls (a silent host): the
 * service answers 503 UNAVAILABLE with Retry-After in bounded time, never hangs and never
 * answers 500, and serves again about a second after the database is back.
 */

const postgres = backends.find((backend) => backend.name === 'postgres')
const DATABASE_TIMEOUT_MS = 1000
const product = { name: 'Outage lamp', price: 9.5, category: 'outage' }

describe.runIf(postgres)('a database outage', () => {
  let relayed: RelayedDatabase
  let relay: TcpRelay
  let server: TestServer
  let productId: number
  let token: string

  beforeAll(async () => {
    relayed = await relayedDatabase(postgres as NonNullable<typeof postgres>, DATABASE_TIMEOUT_MS)
    relay = relayed.relay
    const { database } = relayed
    // Reads go to the database: a cached read would be served through the outage.
    server = await startServer(
      postgres as NonNullable<typeof postgres>,
      { CACHE_TTL_SECONDS: '0' },
      { testDatabase: { database, redisKeyPrefix: 'unused:', drop: () => database.close() } },
    )
    token = (await login(server.api, ADMIN)).accessToken
    const created = await server.api.post('/products', { json: product, token })
    productId = created.body.data.id
  })
  afterAll(async () => {
    await server?.close()
    await relayed?.close()
  })

  /** What a client sees, and how long it waited for it. */
  async function timed<T>(request: () => Promise<T>) {
    const started = performance.now()
    const result = await request()
    return { result, ms: Math.round(performance.now() - started) }
  }

  function expectUnavailable(response: { status: number; body: any; headers: Headers }) {
    expect(response.status).toBe(503)
    expect(response.body.error.code).toBe('UNAVAILABLE')
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0)
  }

  /** Polls until the product reads again; how long that took after `since`. */
  async function recovered(since: number) {
    await expect
      .poll(async () => (await server.api.get(`/products/${productId}`)).status, {
        timeout: 10_000,
        interval: 50,
      })
      .toBe(200)
    return Math.round(performance.now() - since)
  }

  for (const outage of ['cut', 'stall'] as const) {
    it(`answers 503 while the database is ${outage === 'cut' ? 'down' : 'silent'}, then recovers`, async () => {
      expect((await server.api.get(`/products/${productId}`)).status).toBe(200)
      if (outage === 'cut') await relay.cut()
      else relay.stall()

      const read = await timed(() => server.api.get(`/products/${productId}`))
      expectUnavailable(read.result)
      const write = await timed(() => server.api.post('/products', { json: product, token }))
      expectUnavailable(write.result)
      const ready = await timed(() => server.api.get('/ready'))
      expect(ready.result.status).toBe(503)
      const query = await timed(() => graphql(server.baseUrl, '{ messages { id } }'))
      expect(query.result.body.errors?.[0]?.extensions?.code).toBe('UNAVAILABLE')
      // A chat's subscription starts from the chat's newest message, which it reads.
      const subscription = await rawSubscription(server.baseUrl, TRANSPORT_WS, {
        query: 'subscription { messageAdded(chatId: "outage") { id } }',
      })
      const refusal = await subscription.settled()
      subscription.kill()
      expect(refusal.map((error) => error.extensions?.code)).toEqual(['UNAVAILABLE'])
      expect((await server.api.get('/health')).status).toBe(200)

      const restoredAt = performance.now()
      await relay.restore()
      const recoveryMs = await recovered(restoredAt)
      expect((await server.api.get('/ready')).status).toBe(200)
      console.info(
        `database ${outage}: read → 503 in ${read.ms} ms, write → 503 in ${write.ms} ms, ` +
          `/ready → 503 in ${ready.ms} ms, GraphQL → UNAVAILABLE in ${query.ms} ms; ` +
          `serving again ${recoveryMs} ms after the database came back`,
      )
    })
  }
})
