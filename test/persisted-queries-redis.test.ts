import { randomBytes } from 'node:crypto'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LIMITS } from '../src/graphql/limits.js'
import {
  createPersistedQueryStore,
  PERSISTED_QUERY_TTL_SECONDS,
} from '../src/graphql/persisted-query-store.js'
import { connectRedis } from '../src/platform/infrastructure/redis.js'
import { backends } from './helpers/backends.js'
import { persistedQuery, post, sha256 } from './helpers/persisted.js'
import { redisRelay, redisUrl } from './helpers/redis.js'
import { startServer, type TestServer } from './helpers/server.js'

/** Longer than any wait the service allows itself on Redis; a request that hangs fails. */
const HANG_MS = 5000

const registration = (query: string) => ({ query, extensions: persistedQuery(sha256(query)) })
const byHash = (query: string) => ({ extensions: persistedQuery(sha256(query)) })
const codeOf = (answer: Awaited<ReturnType<typeof post>>) =>
  answer.body.errors?.[0]?.extensions?.code

describe.runIf(redisUrl).each(backends)(
  'persisted queries across instances on $name',
  (backend) => {
    let relay: Awaited<ReturnType<typeof redisRelay>>
    let first: TestServer
    let second: TestServer

    beforeAll(async () => {
      relay = await redisRelay(redisUrl as string)
      first = await startServer(backend, { REDIS_URL: redisUrl as string })
      // The second reaches Redis through a relay the test can stall.
      second = await startServer(
        backend,
        { REDIS_URL: relay.url },
        { testDatabase: first.testDatabase },
      )
    })
    afterAll(async () => {
      relay?.restore()
      await second?.close()
      await first?.close()
      await relay?.close()
    })

    it('runs by hash on one instance a query registered on another', async () => {
      const query = 'query { messages(chatId: "across") { id } }'
      expect(codeOf(await post(second.baseUrl, byHash(query)))).toBe('PERSISTED_QUERY_NOT_FOUND')
      expect((await post(first.baseUrl, registration(query))).body).toEqual({
        data: { messages: [] },
      })
      expect((await post(second.baseUrl, byHash(query))).body).toEqual({ data: { messages: [] } })
    })

    it('keeps to its own memory while Redis is silent, and never fails a request for it', async () => {
      const query = 'query { messages(chatId: "silent") { id } }'
      relay.stall()
      const started = performance.now()
      expect(codeOf(await post(second.baseUrl, byHash(query)))).toBe('PERSISTED_QUERY_NOT_FOUND')
      expect((await post(second.baseUrl, registration(query))).body).toEqual({
        data: { messages: [] },
      })
      expect((await post(second.baseUrl, byHash(query))).body).toEqual({ data: { messages: [] } })
      expect(performance.now() - started).toBeLessThan(HANG_MS)
      // Kept by that instance alone: Redis never got it.
      expect(codeOf(await post(first.baseUrl, byHash(query)))).toBe('PERSISTED_QUERY_NOT_FOUND')
      await relay.restore()
    })
  },
)

const documentsPast = (count: number) =>
  Array.from({ length: count }, (_, index) => `query { messages(chatId: "${index}") { id } }`)

describe('the persisted query store', () => {
  it('keeps LIMITS.persistedQueries in memory, the oldest going first', async () => {
    const store = createPersistedQueryStore(undefined)
    const queries = documentsPast(LIMITS.persistedQueries + 1)
    for (const query of queries) await store.set(sha256(query), query)
    expect(await store.get(sha256(queries[0] as string))).toBeUndefined()
    expect(await store.get(sha256(queries[1] as string))).toBe(queries[1])
    expect(await store.get(sha256(queries.at(-1) as string))).toBe(queries.at(-1))
  })

  describe.runIf(redisUrl)('in Redis', () => {
    const redis = connectRedis({
      url: redisUrl as string,
      keyPrefix: `test-${randomBytes(6).toString('hex')}:`,
      timeoutMs: 1000,
      log: pino({ level: 'silent' }),
    })
    afterAll(() => redis.close())

    it('registers at most LIMITS.persistedQueries per window, each for the window, so twice that live at most', async () => {
      const writer = createPersistedQueryStore(redis)
      const queries = documentsPast(LIMITS.persistedQueries + 1)
      await Promise.all(queries.map((query) => writer.set(sha256(query), query)))
      // A store with an empty memory reads what Redis holds.
      const reader = createPersistedQueryStore(redis)
      expect(await reader.get(sha256(queries[0] as string))).toBe(queries[0])
      expect(await reader.get(sha256(queries.at(-1) as string))).toBeUndefined()
      const ttl = await redis.commands.ttl(`persisted-query:${sha256(queries[0] as string)}`)
      expect(ttl).toBeGreaterThan(PERSISTED_QUERY_TTL_SECONDS - 60)
      expect(ttl).toBeLessThanOrEqual(PERSISTED_QUERY_TTL_SECONDS)
    })
  })
})
