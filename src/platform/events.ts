import type { EventEmitter } from 'node:events'
import type { FastifyBaseLogger } from 'fastify'
import mqemitter, { type Message, type MQEmitter } from 'mqemitter'
import mqemitterRedis from 'mqemitter-redis'

/** What mqemitter-redis keeps beyond its typings: its connections and their state. */
interface RedisEmitterInternals {
  pubConn: { status: string; ping(): Promise<unknown> }
  state: EventEmitter
}

export interface LiveSubscriptionOptions {
  /** Events held for a consumer that reads slower than they arrive. */
  maxQueued: number
  /** Called once when the queue passes maxQueued; the subscription has ended by then. */
  onOverflow(): void
}

// A publish that Redis cannot take now is queued by ioredis and sent when it returns;
// the caller does not wait for that.
const PUBLISH_TIMEOUT_MS = 1000

/**
 * The publish/subscribe bus of the service: Mercurius's emitter, in-process or shared
 * through Redis so that every instance sees every event.
 */
export function createEventBus({
  redisUrl,
  log,
}: {
  redisUrl?: string | undefined
  log: FastifyBaseLogger
}) {
  const emitter: MQEmitter = redisUrl ? mqemitterRedis({ connectionString: redisUrl }) : mqemitter()
  const redis = redisUrl ? (emitter as unknown as RedisEmitterInternals) : undefined
  // mqemitter-redis re-emits connection errors on `state`; an EventEmitter without an
  // error listener throws, which would kill the process during a Redis outage.
  redis?.state.on('error', (error: Error) => log.warn({ err: error }, 'redis pub/sub error'))
  let active = 0

  return {
    emitter,
    kind: redisUrl ? ('redis' as const) : ('memory' as const),

    publish(topic: string, payload: unknown): Promise<void> {
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          log.warn({ topic }, 'publish is waiting for pub/sub; carrying on')
          resolve()
        }, PUBLISH_TIMEOUT_MS)
        emitter.emit({ topic, payload }, (error) => {
          clearTimeout(timer)
          if (error) log.error({ err: error, topic }, 'publish failed')
          resolve()
        })
      })
    },

    /**
     * The payloads published on `topic` from now on, once the emitter has subscribed.
     * A consumer that falls `maxQueued` events behind is cut off, never buffered
     * without bound.
     */
    async subscribe(
      topic: string,
      options: LiveSubscriptionOptions,
    ): Promise<AsyncIterableIterator<unknown>> {
      const queue: unknown[] = []
      let waiting: ((result: IteratorResult<unknown>) => void) | undefined
      let ended = false

      const end = () => {
        if (ended) return
        ended = true
        active -= 1
        emitter.removeListener(topic, listener)
        waiting?.({ value: undefined, done: true })
        waiting = undefined
        queue.length = 0
      }
      function listener(message: Message, done: () => void) {
        done()
        if (ended) return
        if (waiting) {
          const resolve = waiting
          waiting = undefined
          resolve({ value: message.payload, done: false })
        } else if (queue.length >= options.maxQueued) {
          end()
          options.onOverflow()
        } else {
          queue.push(message.payload)
        }
      }

      await new Promise<void>((resolve) => emitter.on(topic, listener, resolve))
      active += 1
      const iterator: AsyncIterableIterator<unknown> = {
        next: () => {
          if (queue.length > 0) return Promise.resolve({ value: queue.shift(), done: false })
          if (ended) return Promise.resolve({ value: undefined, done: true })
          return new Promise((resolve) => {
            waiting = resolve
          })
        },
        return: () => {
          end()
          return Promise.resolve({ value: undefined, done: true })
        },
        [Symbol.asyncIterator]: () => iterator,
      }
      return iterator
    },

    /** Live subscriptions on this instance. */
    activeSubscriptions: () => active,

    async ping(): Promise<void> {
      if (!redis) return
      if (redis.pubConn.status !== 'ready') throw new Error(`redis is ${redis.pubConn.status}`)
      await redis.pubConn.ping()
    },

    close(): Promise<void> {
      return new Promise((resolve) => emitter.close(() => resolve()))
    },
  }
}

export type EventBus = ReturnType<typeof createEventBus>

/**
 * The events that pass `keep`. Ending it ends the source at once, even while a
 * `next()` waits (an async generator would wait for one more event first).
 */
export function filtered<T>(
  source: AsyncIterableIterator<unknown>,
  keep: (event: T) => boolean,
): AsyncIterableIterator<T> {
  const iterator: AsyncIterableIterator<T> = {
    async next() {
      for (;;) {
        const result = await source.next()
        if (result.done || keep(result.value as T)) return result as IteratorResult<T>
      }
    },
    return: async () => {
      await source.return?.()
      return { value: undefined, done: true }
    },
    [Symbol.asyncIterator]: () => iterator,
  }
  return iterator
}
