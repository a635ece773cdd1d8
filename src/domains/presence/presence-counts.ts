import type { Redis, Result } from 'ioredis'

/** A user whose last connection went away, and when it did (ISO 8601). */
export interface Departure {
  userId: number
  lastSeen: string
}

/**
 * What a socket opening or closing did: `flipped` the user online or offline, left them
 * as they were, or was not counted yet because this instance is not registered (its
 * first heartbeat failed, or it was counted out while it lived): a heartbeat puts that
 * right.
 */
export type CountChange = 'flipped' | 'unchanged' | 'unregistered'

/** Open WebSockets per user across every instance. */
export interface PresenceCounts {
  arrive(userId: number): Promise<CountChange>
  leave(userId: number): Promise<CountChange>
  /**
   * Proves this instance alive, and counts out the users of instances that stopped
   * proving it, unless this one was as silent itself: those now offline everywhere are
   * `departed`. Puts right what this instance's counts missed (an outage of the store, a
   * counting out during a long pause): users it brings back online are `returned`.
   */
  heartbeat(): Promise<{ departed: Departure[]; returned: number[] }>
  /** Counts this instance's users out at once, as a dead one's would be. */
  forgetThisInstance(): Promise<Departure[]>
}

/** One process: the counts are its own, and it never dies without its users. */
export function createMemoryPresenceCounts(): PresenceCounts {
  const open = new Map<number, number>()
  return {
    async arrive(userId) {
      const count = (open.get(userId) ?? 0) + 1
      open.set(userId, count)
      return count === 1 ? 'flipped' : 'unchanged'
    },
    async leave(userId) {
      const count = (open.get(userId) ?? 1) - 1
      if (count > 0) open.set(userId, count)
      else open.delete(userId)
      return count === 0 ? 'flipped' : 'unchanged'
    },
    heartbeat: async () => ({ departed: [], returned: [] }),
    async forgetThisInstance() {
      const lastSeen = new Date().toISOString()
      const departed = [...open.keys()].map((userId) => ({ userId, lastSeen }))
      open.clear()
      return departed
    },
  }
}

// Keys, each under the deployment's REDIS_KEY_PREFIX (ARGV carries it where a script
// builds a key from data):
//   presence:online          hash user → open sockets on every instance
//   presence:instance:<id>   hash user → open sockets on that instance
//   presence:instances       sorted set instance → last heartbeat, Redis's clock (ms)
// Each script runs atomically. An instance that is not in the set (counted out while it
// lived) counts nothing until its next heartbeat brings its sockets back.

const NOW = `local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)`

const ARRIVE = `
if not redis.call('ZSCORE', KEYS[3], ARGV[2]) then return -1 end
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
return redis.call('HINCRBY', KEYS[1], ARGV[1], 1)`

const LEAVE = `
if not redis.call('ZSCORE', KEYS[3], ARGV[2]) then return -1 end
if redis.call('HINCRBY', KEYS[2], ARGV[1], -1) <= 0 then redis.call('HDEL', KEYS[2], ARGV[1]) end
local total = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if total <= 0 then redis.call('HDEL', KEYS[1], ARGV[1]) return 0 end
return total`

// KEYS: instances, online, this instance's hash. ARGV: instance id, silence allowed
// (ms), key prefix, 'stay' or 'leave' (this instance counts itself out too), then its
// user/count pairs. The instance's hash is made to match its pairs first: what an
// outage made it miss, or all of it after a counting out, is put right. An instance
// whose own last beat is as old as the silence allowed (it was paused, as a whole host
// or process can be, or it is new) counts nobody out: the others' silence may be its
// own pause, and the next beat counts out those that are truly dead. Answers the
// departed (user, ms) pairs and the users that came back online.
const HEARTBEAT = `${NOW}
local returned = {}
local departed = {}
local function depart(user, at)
  redis.call('HDEL', KEYS[2], user)
  table.insert(departed, user)
  table.insert(departed, at)
end
local previous = redis.call('ZSCORE', KEYS[1], ARGV[1])
local awake = previous and tonumber(previous) > now - tonumber(ARGV[2])
local beat = now
if ARGV[4] == 'leave' then beat = 0 end
redis.call('ZADD', KEYS[1], beat, ARGV[1])
local want = {}
for i = 5, #ARGV, 2 do want[ARGV[i]] = tonumber(ARGV[i + 1]) end
local stored = redis.call('HGETALL', KEYS[3])
local have = {}
for i = 1, #stored, 2 do have[stored[i]] = tonumber(stored[i + 1]) end
for user, count in pairs(want) do
  local change = count - (have[user] or 0)
  if change ~= 0 then
    redis.call('HSET', KEYS[3], user, count)
    local total = redis.call('HINCRBY', KEYS[2], user, change)
    if total > 0 and total - change <= 0 then table.insert(returned, user) end
    if total <= 0 then depart(user, now) end
  end
end
for user, count in pairs(have) do
  if not want[user] then
    redis.call('HDEL', KEYS[3], user)
    if redis.call('HINCRBY', KEYS[2], user, -count) <= 0 then depart(user, now) end
  end
end
local dead = {}
if awake then
  dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]), 'WITHSCORES')
end
for d = 1, #dead, 2 do
  local key = ARGV[3] .. 'presence:instance:' .. dead[d]
  local counts = redis.call('HGETALL', key)
  for i = 1, #counts, 2 do
    if redis.call('HINCRBY', KEYS[2], counts[i], -tonumber(counts[i + 1])) <= 0 then
      depart(counts[i], dead[d + 1])
    end
  end
  redis.call('DEL', key)
  redis.call('ZREM', KEYS[1], dead[d])
end
return { departed, returned }`

declare module 'ioredis' {
  interface RedisCommander<Context> {
    presenceArrive(
      online: string,
      mine: string,
      instances: string,
      userId: number,
      instanceId: string,
    ): Result<number, Context>
    presenceLeave(
      online: string,
      mine: string,
      instances: string,
      userId: number,
      instanceId: string,
    ): Result<number, Context>
    presenceHeartbeat(
      instances: string,
      online: string,
      mine: string,
      ...args: (string | number)[]
    ): Result<[string[], string[]], Context>
  }
}

interface RedisPresenceOptions {
  /** The `commands` client, whose keyPrefix ioredis puts before KEYS. */
  redis: Redis
  keyPrefix: string
  instanceId: string
  /** Silence after which an instance counts as dead. */
  silenceMs: number
}

/**
 * Counts in Redis, per instance, so that the users of an instance killed without closing
 * its sockets are counted out by the survivors once its heartbeat has been silent for
 * `silenceMs`.
 */
export function createRedisPresenceCounts(options: RedisPresenceOptions): PresenceCounts {
  const { redis, keyPrefix, instanceId, silenceMs } = options
  for (const [name, lua] of [
    ['presenceArrive', ARRIVE],
    ['presenceLeave', LEAVE],
    ['presenceHeartbeat', HEARTBEAT],
  ] as const) {
    redis.defineCommand(name, { numberOfKeys: 3, lua })
  }
  const ONLINE = 'presence:online'
  const INSTANCES = 'presence:instances'
  const mine = `presence:instance:${instanceId}`
  // This instance's own counts: what a heartbeat brings back after a counting out.
  const local = new Map<number, number>()
  const beat = (move: 'stay' | 'leave', pairs: number[]) =>
    redis.presenceHeartbeat(
      INSTANCES,
      ONLINE,
      mine,
      instanceId,
      silenceMs,
      keyPrefix,
      move,
      ...pairs,
    )
  /** A script's answer: -1 unregistered, else the user's total (flipped at `flippedAt`). */
  const changeOf = (total: number, flippedAt: number): CountChange =>
    total === -1 ? 'unregistered' : total === flippedAt ? 'flipped' : 'unchanged'
  const departures = ([pairs]: [string[], string[]]) =>
    Array.from({ length: pairs.length / 2 }, (_, index) => ({
      userId: Number(pairs[index * 2]),
      lastSeen: new Date(Number(pairs[index * 2 + 1])).toISOString(),
    }))

  return {
    // Each call changes `local` and sends its command in the same tick: the store
    // applies them in the order `local` saw them.
    async arrive(userId) {
      local.set(userId, (local.get(userId) ?? 0) + 1)
      return changeOf(await redis.presenceArrive(ONLINE, mine, INSTANCES, userId, instanceId), 1)
    },
    async leave(userId) {
      const count = (local.get(userId) ?? 1) - 1
      if (count > 0) local.set(userId, count)
      else local.delete(userId)
      return changeOf(await redis.presenceLeave(ONLINE, mine, INSTANCES, userId, instanceId), 0)
    },
    async heartbeat() {
      const answer = await beat('stay', [...local].flat())
      return { departed: departures(answer), returned: answer[1].map(Number) }
    },
    async forgetThisInstance() {
      local.clear()
      return departures(await beat('leave', []))
    },
  }
}
