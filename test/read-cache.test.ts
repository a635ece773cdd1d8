import { randomBytes } from 'node:crypto'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createReadCache, type ReadCache } from '../src/platform/infrastructure/read-cache.js'
import { connectRedis, type RedisConnections } from '../src/platform/infrastructure/redis.js'
import { redisRelay, redisUrl } from './helpers/redis.js'

const silent = pino({ level: 'silent' })

/** A read whose answer the test gives, and which counts how often it ran. */
function controlledRead() {
  const pending: ((value: { value: string }) => void)[] = []
  const read = async (_id: number) =>
    new Promise<{ value: string }>((resolve) => pending.push(resolve))
  return {
    read,
    get calls() {
      return pending.length
    },
    answer(index: number, value: string) {
      pending[index]?.({ value })
    },
  }
}

/** A read that answers its id and how many times it has run, whichever cache ran it. */
function countingRead() {
  let reads = 0
  return async (id: number) => ({ id, read: ++reads })
}

interface Storage {
  name: string
  /** A cache over the store; two of them see it as two instances do. */
  cache(): Promise<ReadCache>
  close(): Promise<void>
}

const memory: Storage = {
  name: 'memory',
  async cache() {
    return createReadCache({ ttlSeconds: 60, redis: undefined, log: silent })
  },
  async close() {},
}

function redisStorage(): Storage & { connections: RedisConnections[] } {
  const connections: RedisConnections[] = []
  const keyPrefix = `test-${randomBytes(6).toString('hex')}:`
  return {
    name: 'Redis',
    connections,
    async cache() {
      const redis = connectRedis({
        url: redisUrl as string,
        keyPrefix,
        timeoutMs: 100,
        log: silent,
      })
      connections.push(redis)
      await vi.waitUntil(() => redis.commands.status === 'ready')
      return createReadCache({ ttlSeconds: 60, redis, log: silent })
    },
    async close() {
      await Promise.all(connections.map((redis) => redis.close()))
    },
  }
}

const storages = redisUrl ? [memory, redisStorage()] : [memory]

describe.each(storages)('the read cache over $name', (storage) => {
  afterAll(() => storage.close())

  it('runs identical concurrent reads once and answers every caller', async () => {
    const cache = await storage.cache()
    const source = controlledRead()
    const cached = cache.cached('coalesced', { references: () => ['a'] }, source.read)
    const answers = Promise.all(Array.from({ length: 20 }, () => cached(1)))
    await vi.waitUntil(() => source.calls === 1)
    source.answer(0, 'first')
    expect(await answers).toEqual(Array(20).fill({ value: 'first' }))
    expect(await cached(1)).toEqual({ value: 'first' })
    expect(source.calls).toBe(1)
  })

  it('reads again after an invalidation of one of its references, and only then', async () => {
    const cache = await storage.cache()
    const cached = cache.cached(
      'referenced',
      { references: (id: number) => ['all', `item:${id}`] },
      countingRead(),
    )
    expect(await cached(1)).toEqual({ id: 1, read: 1 })
    expect(await cached(2)).toEqual({ id: 2, read: 2 })
    await cache.invalidate(['item:1'])
    expect(await cached(1)).toEqual({ id: 1, read: 3 })
    expect(await cached(2)).toEqual({ id: 2, read: 2 })
    await cache.invalidate(['all'])
    expect(await cached(2)).toEqual({ id: 2, read: 4 })
  })

  it("tells a miss the newest write it must see: its caller's, or its references' last", async () => {
    const cache = await storage.cache()
    const told: (number | undefined)[] = []
    const cached = cache.cached(
      'told',
      { references: (id: number) => ['told', `told:${id}`] },
      async (id: number, newestWrite) => {
        told.push(newestWrite)
        return { id }
      },
    )
    const callerWrote = Date.now() - 60_000
    await cached(1)
    await cached(2, callerWrote)
    expect(told).toEqual([undefined, callerWrote])
    const before = Date.now()
    await cache.invalidate(['told:1'])
    await cached(1, callerWrote)
    await cached(2)
    expect(told[2]).toBeGreaterThanOrEqual(before)
    expect(told[2]).toBeLessThanOrEqual(Date.now())
    expect(told.length).toBe(3)
    await cache.invalidate(['told'])
    await cached(2)
    expect(told[3]).toBeGreaterThanOrEqual(told[2] as number)
  })

  it('never serves a read that began before an invalidation, even one that ends after it', async () => {
    const cache = await storage.cache()
    const source = controlledRead()
    const cached = cache.cached('raced', { references: () => ['raced'] }, source.read)
    // The read saw the row before the write committed, and is slow to come back.
    const before = cached(1)
    await vi.waitUntil(() => source.calls === 1)
    await cache.invalidate(['raced'])
    source.answer(0, 'old')
    expect(await before).toEqual({ value: 'old' })
    const after = cached(1)
    await vi.waitUntil(() => source.calls === 2)
    source.answer(1, 'new')
    expect(await after).toEqual({ value: 'new' })
    expect(await cached(1)).toEqual({ value: 'new' })
  })

  it('serves a stored result as it was read, and never stores a result of null', async () => {
    const cache = await storage.cache()
    let reads = 0
    const read = { at: '2026-01-02T03:04:05.678Z', price: 19.99, tags: ['a'], none: null }
    const cached = cache.cached(
      'as-read',
      { references: () => ['as-read'] },
      async (id: number) => {
        reads += 1
        return id === 0 ? null : read
      },
    )
    await cached(1)
    expect(await cached(1)).toEqual(read)
    expect(await cached(0)).toBeNull()
    expect(await cached(0)).toBeNull()
    expect(reads).toBe(3)
  })
})

describe.runIf(redisUrl)('the read cache shared through Redis', () => {
  const storage = redisStorage()
  let relay: Awaited<ReturnType<typeof redisRelay>>
  let viaRelay: RedisConnections

  beforeAll(async () => {
    relay = await redisRelay(redisUrl as string)
    viaRelay = connectRedis({
      url: relay.url,
      keyPrefix: `test-${randomBytes(6).toString('hex')}:`,
      timeoutMs: 100,
      log: silent,
    })
    await vi.waitUntil(() => viaRelay.commands.status === 'ready')
  })
  afterAll(async () => {
    await storage.close()
    await viaRelay?.close()
    await relay?.close()
  })

  it('serves one instance what another read, and drops it on every instance when one invalidates', async () => {
    const [first, second] = [await storage.cache(), await storage.cache()]
    let reads = 0
    const define = (cache: ReadCache) =>
      cache.cached('shared', { references: () => ['shared'] }, async () => ({
        read: ++reads,
      }))
    const [onFirst, onSecond] = [define(first), define(second)]
    expect(await onFirst(1)).toEqual({ read: 1 })
    expect(await onSecond(1)).toEqual({ read: 1 })
    await first.invalidate(['shared'])
    expect(await onSecond(1)).toEqual({ read: 2 })
    expect(await onFirst(1)).toEqual({ read: 2 })
  })

  it('finds a hit in one command that reads the versions with the entry, and serves it only if they match', async () => {
    const [reader, writer] = [await storage.cache(), await storage.cache()]
    const commands = (storage.connections.at(-2) as RedisConnections).commands
    const read = countingRead()
    const define = (cache: ReadCache) =>
      cache.cached('one-trip', { references: (id: number) => ['one-trip', `one-trip:${id}`] }, read)
    const [onReader, onWriter] = [define(reader), define(writer)]
    const sent = { mget: vi.spyOn(commands, 'mget'), get: vi.spyOn(commands, 'get') }
    const commandsOf = async (request: () => Promise<unknown>) => {
      sent.mget.mockClear()
      sent.get.mockClear()
      const result = await request()
      return { result, mget: sent.mget.mock.calls.length, get: sent.get.mock.calls.length }
    }

    expect(await onReader(1)).toEqual({ id: 1, read: 1 })
    expect(await commandsOf(() => onReader(1))).toEqual({
      result: { id: 1, read: 1 },
      mget: 1,
      get: 0,
    })
    // The entry stored under the versions this instance expects is still there, but a
    // write elsewhere gave the product a new version: that entry is old, and not served.
    await writer.invalidate(['one-trip:1'])
    expect(await onReader(1)).toEqual({ id: 1, read: 2 })
    // The new versions, once seen (or given by a write), find the new entry in one command.
    expect(await commandsOf(() => onReader(1))).toEqual({
      result: { id: 1, read: 2 },
      mget: 1,
      get: 0,
    })
    expect(await onWriter(1)).toEqual({ id: 1, read: 2 })
    expect(await onReader(2)).toEqual({ id: 2, read: 3 })
  })

  it('sends the invalidations asked for in one turn as one command per reference', async () => {
    const [writer, reader] = [await storage.cache(), await storage.cache()]
    const commands = (storage.connections.at(-2) as RedisConnections).commands
    const onReader = reader.cached(
      'gathered',
      { references: (id: number) => ['gathered', `gathered:${id}`] },
      countingRead(),
    )
    expect(await onReader(1)).toEqual({ id: 1, read: 1 })
    const set = vi.spyOn(commands, 'set')
    await Promise.all([
      writer.invalidate(['gathered', 'gathered:1']),
      writer.invalidate(['gathered']),
      writer.invalidate(['gathered', 'gathered:2']),
    ])
    expect(set.mock.calls.map(([key]) => key).sort()).toEqual([
      'cache-version:gathered',
      'cache-version:gathered:1',
      'cache-version:gathered:2',
    ])
    expect(await onReader(1)).toEqual({ id: 1, read: 2 })
    // One asked for after the others went out goes out on its own.
    await writer.invalidate(['gathered:1'])
    expect(set).toHaveBeenCalledTimes(4)
    expect(await onReader(1)).toEqual({ id: 1, read: 3 })
  })

  it('reads from the source while Redis is away; what a lost invalidation left expires with its TTL', async () => {
    const logged: { level: number; msg: string; failedInvalidations?: number }[] = []
    const log = pino({ level: 'info' }, { write: (line: string) => logged.push(JSON.parse(line)) })
    const cache = createReadCache({ ttlSeconds: 2, redis: viaRelay, log })
    let reads = 0
    const cached = cache.cached('outage', { references: () => ['outage'] }, async () => ({
      read: ++reads,
    }))
    expect(await cached(1)).toEqual({ read: 1 })
    expect(await cached(1)).toEqual({ read: 1 })
    await relay.cut()
    await vi.waitUntil(() => viaRelay.commands.status !== 'ready')
    expect(await cached(1)).toEqual({ read: 2 })
    expect(await cached(1)).toEqual({ read: 3 })
    for (let write = 0; write < 3; write++) {
      await expect(cache.invalidate(['outage'])).resolves.toBeUndefined()
    }
    // One line for the outage, not one for each write.
    expect(logged.map(({ level, msg }) => [level, msg])).toEqual([
      [50, 'cache invalidation failed'],
    ])
    await relay.restore()
    await vi.waitUntil(() => viaRelay.commands.status === 'ready', { timeout: 5000 })
    await cache.invalidate(['elsewhere'])
    expect(logged.at(-1)).toMatchObject({
      level: 30,
      msg: 'cache invalidations succeed again',
      failedInvalidations: 3,
    })
    // The entry of before the outage may still be served, but not past its two seconds.
    await vi.waitUntil(async () => (await cached(1)).read > 1, { timeout: 3500, interval: 100 })
    expect(await cached(1)).toEqual({ read: 4 })
  })
})

describe('the read cache turned off (CACHE_TTL_SECONDS=0)', () => {
  it('reads from the source every time', async () => {
    const cache = createReadCache({ ttlSeconds: 0, redis: undefined, log: silent })
    let reads = 0
    const cached = cache.cached('off', { references: () => ['off'] }, async () => ++reads)
    await cached(1)
    await cached(1)
    expect(reads).toBe(2)
  })
})
