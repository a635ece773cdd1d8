import type { FastifyBaseLogger } from 'fastify'
import { Redis, type RedisOptions } from 'ioredis'
import type { Config, RedisTarget } from '../../config.js'

/** Reconnect backoff: 100 ms more per attempt, never more than 2 s between attempts. */
const retryStrategy = (attempt: number) => Math.min(attempt * 100, 2000)
const QUIT_TIMEOUT_MS = 1000
/**
 * How long Redis may stay silent while it owes an answer: far longer than it ever takes
 * to answer, so only a Redis that has gone silent (a stopped process, a host or a network
 * that drops packets) reaches it. See watchOwedCommands.
 */
const SILENCE_MS = 1000
/** While Redis is slow, a PING this often tells when it answers in time again. */
const RECOVERY_PROBE_MS = 500

/**
 * The service's Redis clients, made in one place and handed to whatever needs Redis.
 * A subscribing connection can run nothing but pub/sub, so each role has its own.
 */
export interface RedisConnections {
  /**
   * Commands of stores that span instances (rate-limit counters…). It fails at once
   * while Redis is away, so a request never waits on it; the stores fail open.
   */
  commands: Redis
  /**
   * Publishes events. It refuses at once while Redis is away rather than holding them:
   * the outbox keeps what must not be lost and publishes it again.
   */
  publisher: Redis
  /** Receives events: in subscriber mode, it runs only pub/sub commands. */
  subscriber: Redis
  /** REDIS_KEY_PREFIX: before every key, and every pub/sub channel, of this deployment. */
  keyPrefix: string
  /**
   * False while Redis is away, or slow: a command owed longer than REDIS_TIMEOUT_MS. A
   * request's stores then do without Redis, as when it is down, rather than each pay
   * the deadline. True again once a PING comes back within it.
   */
  answersInTime(): boolean
  /** Throws unless every connection is ready and Redis answers. */
  ping(): Promise<void>
  close(): Promise<void>
}

export type RedisSettings = RedisTarget & {
  /** Put before every key this service stores, so deployments can share one Redis. */
  keyPrefix: string
  /** REDIS_TIMEOUT_MS: the longest a request waits on one Redis command. */
  timeoutMs: number
  log: FastifyBaseLogger
}

/** The service's connections as the configuration says: none without Redis. */
export function redisFromConfig(
  config: Pick<Config, 'redis' | 'redisKeyPrefix' | 'redisTimeoutMs'>,
  log: FastifyBaseLogger,
): RedisConnections | undefined {
  if (!config.redis) return undefined
  return connectRedis({
    ...config.redis,
    keyPrefix: config.redisKeyPrefix,
    timeoutMs: config.redisTimeoutMs,
    log,
  })
}

/**
 * Through Sentinel every connection asks the Sentinels for the primary, and asks again
 * each time it reconnects: a primary that died is replaced by the replica they promote.
 * - A connection that reaches a replica instead (a Sentinel that had not heard of the
 *   failover yet) is refused by ioredis's ready check, which reads the role, and tries
 *   the next Sentinel.
 * - A primary demoted while connected closes its clients' connections (Sentinel has it
 *   kill them); should a connection survive, the replica's first READONLY answer
 *   reconnects it. That command fails, as any command owed at a disconnection does.
 * - A Sentinel that accepts and says nothing is given up after SILENCE_MS.
 */
function sentinelOptions(target: Extract<RedisTarget, { sentinels: unknown }>): RedisOptions {
  return {
    sentinels: target.sentinels,
    name: target.name,
    role: 'master',
    sentinelRetryStrategy: retryStrategy,
    sentinelCommandTimeout: SILENCE_MS,
    reconnectOnError: (error) => error.message.startsWith('READONLY'),
  }
}

export function connectRedis({
  keyPrefix,
  timeoutMs,
  log,
  ...target
}: RedisSettings): RedisConnections {
  const latency = latencyVerdict(timeoutMs, log)
  const connect = (role: string, options: RedisOptions) => {
    const shared = { retryStrategy, connectTimeout: 5000, ...options }
    const client =
      'url' in target
        ? new Redis(target.url, shared)
        : new Redis({ ...sentinelOptions(target), ...shared })
    // An ioredis client without an error listener crashes the process on the first
    // refused connection; an outage is logged and ridden out instead.
    client.on('error', (error: Error) => log.warn({ err: error, role }, 'redis connection error'))
    return client
  }
  /** A client whose callers never wait for Redis to come back (see failOwedOnClose). */
  const failingFast = (role: string, options: RedisOptions) => {
    const client = connect(role, { ...options, enableOfflineQueue: false })
    failOwedOnClose(client)
    return client
  }
  const connections = {
    commands: failingFast('commands', {
      keyPrefix,
      // The commands of one turn of the event loop, from every request in it, go out in
      // one write: a write to a socket is most of what a command costs this process.
      enableAutoPipelining: true,
      // But a SET goes out alone: the cache's version bumps are gathered into one SET a
      // turn already, and its entries are stored once per miss. A pipeline of one command
      // costs more than the command alone, enough to show in what a create costs.
      autoPipeliningIgnoredCommands: ['set'],
    }),
    // Auto-pipelined too: the events of one loop turn go out in one write, in order.
    // The outbox publishes again what failed.
    publisher: failingFast('publisher', { enableAutoPipelining: true }),
    // What a subscriber had in flight (a SUBSCRIBE) is sent again on the next connection.
    subscriber: connect('subscriber', {}),
  }
  // The commands connection is on requests' paths: none of its commands is owed past the
  // deadline. The others' answers are waited for (the outbox publishes again what fails).
  watchOwedCommands(connections.commands, {
    silenceMs: SILENCE_MS,
    deadline: { ms: timeoutMs, onLate: latency.slow },
  })
  watchOwedCommands(connections.publisher, { silenceMs: SILENCE_MS })
  watchOwedCommands(connections.subscriber, { silenceMs: SILENCE_MS })
  const clients = Object.values(connections)
  const probing = setInterval(() => {
    if (connections.commands.status === 'ready') latency.probe(connections.commands)
  }, RECOVERY_PROBE_MS)
  probing.unref()
  return {
    ...connections,
    keyPrefix,
    answersInTime: () => latency.inTime() && connections.commands.status === 'ready',

    async ping() {
      const down = Object.entries(connections).filter(([, client]) => client.status !== 'ready')
      if (down.length > 0) {
        throw new Error(
          `redis is not ready: ${down.map(([role, { status }]) => `${role} ${status}`)}`,
        )
      }
      // Not on the commands connection: past its deadline a slow Redis would read as down.
      await connections.publisher.ping()
    },

    async close() {
      clearInterval(probing)
      await Promise.all(clients.map(quit))
    },
  }
}

/**
 * Whether Redis answers within the deadline. It turns slow when a command is owed
 * longer, and in time again when a PING, sent while slow, comes back within it.
 */
function latencyVerdict(timeoutMs: number, log: FastifyBaseLogger) {
  let slow = false
  let probing = false
  return {
    inTime: () => !slow,
    slow() {
      if (!slow) log.warn({ timeoutMs }, 'redis answers slower than REDIS_TIMEOUT_MS')
      slow = true
    },
    probe(client: Redis) {
      if (!slow || probing) return
      probing = true
      const sent = performance.now()
      client
        .ping()
        .then(
          () => {
            if (performance.now() - sent > timeoutMs) return
            slow = false
            log.info('redis answers in time again')
          },
          () => {},
        )
        .finally(() => {
          probing = false
        })
    },
  }
}

interface OwedCommandLimits {
  /** Owed this long, Redis has gone silent: the connection is closed. */
  silenceMs: number
  /** Owed this long, a command is late: it fails, and Redis is slow (commands only). */
  deadline?: { ms: number; onLate(): void }
}

/** What a late command fails with; the caller goes on as when Redis is down. */
const lateError = (ms: number) => new Error(`Redis did not answer within ${ms} ms`)

/**
 * Reads ioredis's queue of owed commands every quarter of the shortest limit, so nothing
 * is added to the path of a reply (a timer per command, as ioredis's commandTimeout
 * sets, costs more than most commands).
 * - Past the deadline a command fails, and the verdict learns that Redis is slow. The
 *   command stays in the queue: its answer, when it comes, is matched to it and dropped.
 * - A Redis gone silent closes nothing, and ioredis would go on sending to it: once the
 *   same command has been owed for about `silenceMs`, the connection is closed and
 *   ioredis reconnects, and until Redis answers again the client is not ready: its
 *   commands fail at once and the stores fail open, as when Redis is down.
 *
 * Timers run before a turn reads its sockets, so after this process was held up (a long
 * collection, a synchronous task, a starved CPU) a limit passes with the answer there,
 * unread. As in silence-watch.ts, the verdict waits for the turn's reads: only a command
 * still owed then is late. ioredis's own commandTimeout does not wait, and failed many
 * commands of a healthy Redis on a loaded machine.
 */
function watchOwedCommands(client: Redis, limits: OwedCommandLimits) {
  const firstSeen = new WeakMap<object, number>()
  const ageOf = (owed: object, now: number) => now - (firstSeen.get(owed) ?? now)
  const check = () => {
    // Read anew each time: ioredis starts a new queue with each connection.
    const queue = client.commandQueue
    const now = performance.now()
    for (let index = 0; index < queue.length; index++) {
      const owed = queue.peekAt(index) as object
      if (!firstSeen.has(owed)) firstSeen.set(owed, now)
    }
    const head = queue.peekFront()
    if (head === undefined || ageOf(head, now) <= (limits.deadline?.ms ?? limits.silenceMs)) return
    setImmediate(() => judgeAfterReads(now))
  }
  const judgeAfterReads = (checkedAt: number) => {
    const queue = client.commandQueue
    const head = queue.peekFront()
    if (head === undefined) return
    if (ageOf(head, checkedAt) > limits.silenceMs) return client.stream.destroy()
    const { deadline } = limits
    if (!deadline) return
    const late = queue.toArray().filter((owed) => ageOf(owed, checkedAt) > deadline.ms)
    if (late.length === 0) return
    deadline.onLate()
    const error = lateError(deadline.ms)
    for (const owed of late) owed.command.reject(error)
  }
  const watch = setInterval(check, Math.min(limits.deadline?.ms ?? Infinity, limits.silenceMs) / 4)
  watch.unref()
  client.on('end', () => clearInterval(watch))
}

/**
 * ioredis keeps what a closed connection still owed and sends it again once Redis is back,
 * however long that takes. These commands fail instead: their callers fail open rather
 * than wait, and a counter is not bumped behind the back of a caller that was already
 * answered. The 'close' event comes a tick after the queue was set aside for resending,
 * while it is still the connection's.
 */
function failOwedOnClose(client: Redis) {
  client.on('close', () => {
    const error = new Error('The connection to Redis closed before it answered')
    for (let owed = client.commandQueue.shift(); owed; owed = client.commandQueue.shift()) {
      owed.command.reject(error)
    }
  })
}

/** QUIT lets pending replies arrive; a Redis that does not answer is cut off instead. */
async function quit(client: Redis): Promise<void> {
  if (client.status === 'end') return
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, QUIT_TIMEOUT_MS)
  })
  await Promise.race([client.quit().catch(() => undefined), timeout])
  clearTimeout(timer)
  client.disconnect()
}
