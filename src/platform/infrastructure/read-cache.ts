import { randomUUID } from 'node:crypto'
import { createCache } from 'async-cache-dedupe'
import type { FastifyBaseLogger } from 'fastify'
import { stringify } from 'safe-stable-stringify'
import { storageKeyOf } from './async-cache-dedupe-adapter.js'
import type { RedisConnections } from './redis.js'

/**
 * A cached read: what its arguments depend on (references such as `product:7`). Its
 * result is stored as JSON and served as parsed, so it must be a JSON value (strings for
 * dates, null for nothing): what is read is what is served. A null is not stored: a
 * write that makes what was missing then has no miss to invalidate, and a miss costs
 * what it did before the cache (a lookup by key).
 */
export interface CachedReadOptions<Args> {
  references(args: Args): string[]
}

/**
 * Reads shared by every instance: identical concurrent reads run once, results live
 * `ttlSeconds`, and a committed write makes every entry depending on its references stale
 * at once, on every instance.
 */
export interface ReadCache {
  /** How long a result may be served after it was read: 0 when the cache is off. */
  readonly ttlSeconds: number
  /**
   * `newestWrite`, given to the cached read and handed on to `read`: the instant (ms since
   * the epoch) of the newest write the read must see, its caller's own. A miss hands
   * `read` the newer of it and the last write of the read's references, when known, so
   * that a store that may lag (a read replica) can tell whether it may answer the read
   * that fills the entry.
   */
  cached<Args, Result>(
    name: string,
    options: CachedReadOptions<Args>,
    read: (args: Args, newestWrite: NewestWrite) => Promise<Result>,
  ): (args: Args, newestWrite?: NewestWrite) => Promise<Result>
  /** Called after the write has committed; never throws (a failure is logged, see below). */
  invalidate(references: readonly string[]): Promise<void>
}

/** An instant in ms since the epoch, or undefined: no write that a read must see. */
export type NewestWrite = number | undefined

interface VersionedArgs<Args> {
  args: Args
  versions: string
}

/** What a miss runs with: the first caller's newest write, which the key leaves out. */
interface FillArgs<Args> extends VersionedArgs<Args> {
  newestWrite: NewestWrite
}

/** The key of an entry, stable whatever the order of the arguments' fields. */
const entryKeyOf = ({ args, versions }: VersionedArgs<unknown>): string => {
  const key: VersionedArgs<unknown> = { args, versions }
  return stringify(key)
}

const newerOf = (a: NewestWrite, b: NewestWrite) =>
  a === undefined ? b : b === undefined ? a : Math.max(a, b)

export interface ReadCacheSettings {
  ttlSeconds: number
  redis: RedisConnections | undefined
  log: FastifyBaseLogger
}

/**
 * Invalidation by version, not by deleting entries: every reference has a version, and an
 * entry is stored under the versions its read saw before it went to the database. A write
 * gives its references new versions after it commits, so a read that started before the
 * commit (and may have seen the old row) stores under versions nobody asks for any more.
 * Deleting entries instead would let such a read put the old row back after the delete.
 */
interface Versions {
  /**
   * The references' versions, or undefined when they cannot be known (Redis away). Where
   * the store can, it reads in the same step the entry stored under the versions it
   * expects (`storageKeyOf` them), and gives it when they are the versions it found.
   */
  current(
    references: readonly string[],
    storageKeyOf: (versions: string) => string,
  ): Promise<SeenVersions | undefined>
  bump(references: readonly string[]): Promise<void>
}

interface SeenVersions {
  versions: string
  /** The stored entry as async-cache-dedupe wrote it (JSON), read with the versions. */
  stored?: string
  /** When the newest of the references was written (its version's instant), if ever. */
  newestWrite: NewestWrite
}

/** A reference never written has this version. */
const NEVER_WRITTEN = '0'

/**
 * A written reference's version begins with the instant of its write (ms since the
 * epoch, after the commit), so that every instance can tell a write too recent for a
 * lagging replica to hold. A version without one (written by an instance from before
 * they carried it) counts as written now: its reads stay on the primary until it changes.
 */
const versionAt = (at: number) => `${at}.${randomUUID()}`
function writtenAt(version: string): NewestWrite {
  if (version === NEVER_WRITTEN) return undefined
  const at = Number(version.slice(0, version.indexOf('.')))
  return Number.isSafeInteger(at) && at > 0 ? at : Date.now()
}

/** Size of the in-memory cache, per cached read. */
const MEMORY_ENTRIES = 10_000

export function createReadCache({ ttlSeconds, redis, log }: ReadCacheSettings): ReadCache {
  if (ttlSeconds === 0) {
    return { ttlSeconds, cached: (_name, _options, read) => read, invalidate: async () => {} }
  }
  const cacheLog = log.child({ component: 'read-cache' })
  /** Invalidations failed since the last that succeeded. */
  let failedInARow = 0
  const versions = redis ? redisVersions(redis, ttlSeconds) : memoryVersions()
  const cache = createCache({
    ttl: ttlSeconds,
    storage: redis
      ? { type: 'redis', options: { client: redis.commands, log: cacheLog } }
      : { type: 'memory', options: { size: MEMORY_ENTRIES, log: cacheLog } },
  })

  return {
    ttlSeconds,

    cached<Args, Result>(
      name: string,
      { references }: CachedReadOptions<Args>,
      read: (args: Args, newestWrite: NewestWrite) => Promise<Result>,
    ) {
      type Fill = (key: FillArgs<Args>) => Promise<Result>
      // define adds the cached function to the cache under its name. Identical reads
      // that arrive together share the first one's fill, whatever newest write the others
      // bring: one that wrote what the read depends on has changed its versions, so it is
      // not identical.
      const defined = cache.define(
        name,
        { serialize: entryKeyOf, ttl: (result: Result) => (result === null ? 0 : ttlSeconds) },
        (({ args, newestWrite }) => read(args, newestWrite)) satisfies Fill,
      )[name] as Fill
      const entryOf = (args: Args) => (versions: string) =>
        storageKeyOf(name, entryKeyOf({ args, versions }))
      return async (args: Args, newestWrite?: NewestWrite) => {
        const seen = await versions.current(references(args), entryOf(args))
        // Without the versions no entry can be trusted: the read goes to the database.
        if (seen === undefined) return read(args, newestWrite)
        if (seen.stored !== undefined) return JSON.parse(seen.stored) as Result
        const newest = newerOf(newestWrite, seen.newestWrite)
        return defined({ args, versions: seen.versions, newestWrite: newest })
      }
    },

    async invalidate(references) {
      try {
        await versions.bump(references)
        if (failedInARow > 0) {
          cacheLog.info({ failedInvalidations: failedInARow }, 'cache invalidations succeed again')
          failedInARow = 0
        }
      } catch (error) {
        // Entries of the old versions live on until they expire: stale for ttlSeconds at most.
        // Redis away fails every write's invalidation: one line says so, the rest are counted.
        if (failedInARow++ === 0) {
          cacheLog.error({ err: error, references }, 'cache invalidation failed')
        }
      }
    },
  }
}

/**
 * Versions in Redis, shared by the instances. A reference never written has version 0;
 * one written gets a random version that outlives every entry stored under the one
 * before (VERSION_LIFETIMES entries' lives), after which it reads as 0 again, and no entry
 * of that earlier 0 can still be alive: reads end within the database's deadline.
 */
const VERSION_LIFETIMES = 12
const VERSION_MIN_SECONDS = 60

/**
 * How many written references' versions an instance remembers to expect; past that it
 * forgets them all, and each costs one more round trip to learn again.
 */
const EXPECTED_VERSIONS = 10_000

function redisVersions(redis: RedisConnections, ttlSeconds: number): Versions {
  const { commands } = redis
  const key = (reference: string) => `cache-version:${reference}`
  const lifetime = Math.max(VERSION_MIN_SECONDS, ttlSeconds * VERSION_LIFETIMES)
  // The versions this instance last saw of references that have been written. A hit then
  // takes one MGET, atomic in Redis, of the versions and the entry stored under the ones
  // expected; that entry is used only if they are the versions found.
  const expected = new Map<string, string>()
  const expect = (reference: string, version: string) => {
    if (version === NEVER_WRITTEN) expected.delete(reference)
    else {
      if (expected.size >= EXPECTED_VERSIONS) expected.clear()
      expected.set(reference, version)
    }
  }

  /**
   * The bumps asked for in one turn of the event loop go out together at its end, one
   * SET per reference whichever writes asked for it: under load, several writes commit
   * in a turn, and each SET was a command and a system call of its own. Every write asks
   * after it has committed and the SET goes out after that, so a read that finds the new
   * version finds the write too.
   */
  let gathering: { references: Set<string>; sent: Promise<void> } | undefined
  function gatherBumps() {
    const references = new Set<string>()
    const sent = new Promise((resolve) => setImmediate(resolve)).then(() => {
      gathering = undefined
      return setNewVersion([...references])
    })
    return { references, sent }
  }

  async function setNewVersion(references: readonly string[]) {
    // One new version for every reference: new to each of them, and one draw from the
    // entropy pool randomUUID keeps rather than a system call apiece. Each SET goes out on
    // its own, not auto-pipelined (see redis.ts): most turns bump only `products`.
    const version = versionAt(Date.now())
    await Promise.all(
      references.map((reference) => commands.set(key(reference), version, 'EX', lifetime)),
    )
    for (const reference of references) expect(reference, version)
  }

  return {
    async current(references, storageKeyOf) {
      // A Redis away or slow is not asked: the read goes to the database at once.
      if (!redis.answersInTime()) return undefined
      const expecting = references
        .map((reference) => expected.get(reference) ?? NEVER_WRITTEN)
        .join(',')
      try {
        const found = await commands.mget([...references.map(key), storageKeyOf(expecting)])
        const stored = found.pop()
        const seen = references.map((reference, index) => {
          const version = found[index] ?? NEVER_WRITTEN
          expect(reference, version)
          return version
        })
        const versions = seen.join(',')
        const newestWrite = seen.map(writtenAt).reduce(newerOf, undefined)
        return versions === expecting && stored != null
          ? { versions, stored, newestWrite }
          : { versions, newestWrite }
      } catch {
        return undefined
      }
    },

    bump(references) {
      gathering ??= gatherBumps()
      for (const reference of references) gathering.references.add(reference)
      return gathering.sent
    },
  }
}

/**
 * Versions of one process, from one counter that only grows. When the table is full it is
 * emptied, and every reference then reads as the counter's value at that moment: newer
 * than any version it had, so no entry stored before becomes current again.
 */
const MEMORY_VERSIONS = 100_000

function memoryVersions(): Versions {
  const versions = new Map<string, { version: number; at: number }>()
  let counter = 0
  /** What a reference not in the table reads as: 0 and never written, or the last clear. */
  let floor: { version: number; at: NewestWrite } = { version: 0, at: undefined }
  return {
    async current(references) {
      const seen = references.map((reference) => versions.get(reference) ?? floor)
      return {
        versions: seen.map(({ version }) => version).join(','),
        newestWrite: seen.map(({ at }) => at).reduce(newerOf, undefined),
      }
    },

    async bump(references) {
      const at = Date.now()
      if (versions.size + references.length > MEMORY_VERSIONS) {
        versions.clear()
        floor = { version: counter, at }
      }
      for (const reference of references) versions.set(reference, { version: ++counter, at })
    },
  }
}
