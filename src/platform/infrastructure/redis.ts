import type { FastifyBaseLogger } from 'fastify'
import { Redis, type RedisOptions } from 'ioredis'

/** Reconnect backoff: 100 ms more per attempt, never more than 2 s between attempts. */
const retryStrategy = (attempt: number) => Math.min(attempt * 100, 2000)
const QUIT_TIMEOUT_MS = 1000
/**
 * How long Redis may stay silent while it owes an answer: far longer than it ever takes
 * to answer, so only a Redis that has gone silent (a stopped process, a host or a network
 * that drops packets) reaches it. See closeWhenSilent.
 */
const SILENCE_MS = 1000

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
  /** Throws unless every connection is ready and Redis answers. */
  ping(): Promise<void>
  close(): Promise<void>
}

export interface RedisSettings {
  url: string
  /** Put before every key this service stores, so deployments can share one Redis. */
  keyPrefix: string
  log: FastifyBaseLogger
}

export function connectRedis({ url, keyPrefix, log }: RedisSettings): RedisConnections {
  const connect = (role: string, options: RedisOptions) => {
    const client = new Redis(url, { retryStrategy, connectTimeout: 5000, ...options })
    // An ioredis client without an error listener crashes the process on the first
    // refused connection; an outage is logged and ridden out instead.
    client.on('error', (error: Error) => log.warn({ err: error, role }, 'redis connection error'))
    closeWhenSilent(client, SILENCE_MS)
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
  const clients = Object.values(connections)
  return {
    ...connections,
    keyPrefix,

    async ping() {
      const down = Object.entries(connections).filter(([, client]) => client.status !== 'ready')
      if (down.length > 0) {
        throw new Error(
          `redis is not ready: ${down.map(([role, { status }]) => `${role} ${status}`)}`,
        )
      }
      await connections.commands.ping()
    },

    async close() {
      await Promise.all(clients.map(quit))
    },
  }
}

/**
 * A Redis gone silent closes nothing, and ioredis would go on sending to it. A Redis that
 * answers moves the client's oldest owed command on; once the same one has been owed for
 * about `silenceMs`, the connection is closed and ioredis reconnects, and until Redis
 * answers again the client is not ready: its commands fail at once and the stores fail
 * open, as when Redis is down. Read from ioredis's queue each tick, so nothing is added to
 * the path of a reply.
 *
 * Timers run before a turn reads its sockets, so after this process was held up (a long
 * collection, a synchronous task) the second passes with the answer there, unread. As in
 * silence-watch.ts, the verdict waits for the turn's reads: only a command still owed
 * then closes the connection. Otherwise a healthy Redis would be cut off after every such
 * pause, and every instance fail open with it.
 */
function closeWhenSilent(client: Redis, silenceMs: number) {
  let oldest: unknown
  let owedSince = 0
  const watch = setInterval(() => {
    const head = client.commandQueue.peekFront()
    const now = performance.now()
    if (head !== oldest) {
      oldest = head
      owedSince = now
    } else if (head !== undefined && now - owedSince > silenceMs) {
      setImmediate(() => {
        if (client.commandQueue.peekFront() === head) client.stream.destroy()
      })
    }
  }, silenceMs / 4)
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
