import type { RedisConnections } from '../platform/infrastructure/redis.js'
import { setNewest } from '../platform/newest-entries.js'
import { LIMITS } from './limits.js'

/** How long a registered query lives in Redis, and the window its registrations count in. */
export const PERSISTED_QUERY_TTL_SECONDS = 3600

/**
 * A registration in one round trip: counted in its window, and stored only within the
 * window's budget, so however many distinct documents are sent, Redis holds at most
 * twice LIMITS.persistedQueries of them (this window's and the last one's).
 */
const REGISTER_SCRIPT = `
local registered = redis.call('INCR', KEYS[1])
if registered == 1 then redis.call('EXPIRE', KEYS[1], ARGV[3]) end
if registered > tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[3])
return 1`

/** Documents of automatic persisted queries by their SHA-256 (lower-case hex). */
export interface PersistedQueryStore {
  get(hash: string): Promise<string | undefined>
  /** Keeps the document; one over LIMITS.persistedQueryBytes is not kept. Never throws. */
  set(hash: string, query: string): Promise<void>
}

/**
 * The instance's own memory first, then Redis when it is set and answers in time: a
 * document is named by its hash, so a copy can never be stale, and a query an instance
 * has seen costs no round trip. With Redis slow or away, each instance keeps what it was
 * sent, and a client that misses sends its document again, as the protocol expects.
 * Redis's failures are not logged here: its connections and its deadline log them.
 */
export function createPersistedQueryStore(redis: RedisConnections | undefined) {
  const memory = new Map<string, string>()
  const remember = (hash: string, query: string) =>
    setNewest(memory, hash, query, LIMITS.persistedQueries)
  const key = (hash: string) => `persisted-query:${hash}`
  const windowKey = () =>
    `persisted-query-registrations:${Math.floor(Date.now() / 1000 / PERSISTED_QUERY_TTL_SECONDS)}`

  async function fromRedis(hash: string) {
    if (!redis?.answersInTime()) return undefined
    try {
      return (await redis.commands.get(key(hash))) ?? undefined
    } catch {
      return undefined
    }
  }

  return {
    async get(hash) {
      const known = memory.get(hash) ?? (await fromRedis(hash))
      if (known !== undefined) remember(hash, known)
      return known
    },

    async set(hash, query) {
      if (memory.has(hash) || Buffer.byteLength(query) > LIMITS.persistedQueryBytes) return
      remember(hash, query)
      if (!redis?.answersInTime()) return
      const limits = [LIMITS.persistedQueries, PERSISTED_QUERY_TTL_SECONDS]
      await redis.commands
        .eval(REGISTER_SCRIPT, 2, windowKey(), key(hash), query, ...limits)
        .catch(() => {})
    },
  } satisfies PersistedQueryStore
}
