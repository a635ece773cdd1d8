import type { FastifyBaseLogger } from 'fastify'
import mqemitter, { type Message, type MQEmitter } from 'mqemitter'
import mqemitterRedis from 'mqemitter-redis'
import type { RedisConnections } from './redis.js'

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
 * A topic name that carries the type of its events, so a publisher and a subscriber of
 * one topic cannot disagree on what travels on it. Topic names live in one module per
 * domain (`<domain>-topics.ts`).
 */
export type Topic<Event> = string & { readonly event?: Event }

/**
 * An id as one level of a topic. Topics are `/`-separated and `+` and `#` are wildcards
 * (mqemitter's rules), so a chat named `+` must not follow every chat; `*`, `?` and `[`
 * are encoded as well, being Redis's pattern characters.
 */
export const topicSegment = (id: string) =>
  encodeURIComponent(id).replace(
    /[!'()*]/g,
    (character) => `%${character.charCodeAt(0).toString(16)}`,
  )

/**
 * The publish/subscribe bus of the service: Mercurius's emitter, in-process or shared
 * through Redis so that every instance sees every event. Publish on narrow topics
 * (`chat/<id>/messageAdded`); subscribe with `+` for one level of any value.
 */
export function createEventBus({
  redis,
  log,
}: {
  redis?: RedisConnections | undefined
  log: FastifyBaseLogger
}) {
  const emitter: MQEmitter = redis
    ? mqemitterRedis({ pubConn: redis.publisher, subConn: redis.subscriber })
    : mqemitter()
  let active = 0

  return {
    emitter,
    kind: redis ? ('redis' as const) : ('memory' as const),

    publish<Event>(topic: Topic<Event>, payload: Event): Promise<void> {
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
    async subscribe<Event>(
      topic: Topic<Event>,
      options: LiveSubscriptionOptions,
    ): Promise<AsyncIterableIterator<Event>> {
      const queue: Event[] = []
      let waiting: ((result: IteratorResult<Event>) => void) | undefined
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
          resolve({ value: message.payload as Event, done: false })
        } else if (queue.length >= options.maxQueued) {
          end()
          options.onOverflow()
        } else {
          queue.push(message.payload as Event)
        }
      }

      await new Promise<void>((resolve) => emitter.on(topic, listener, resolve))
      active += 1
      const iterator: AsyncIterableIterator<Event> = {
        next: () => {
          const queued = queue.shift()
          if (queued !== undefined) return Promise.resolve({ value: queued, done: false })
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

    /** The in-process emitter is closed here; Redis connections, by their owner. */
    async close(): Promise<void> {
      if (!redis) await new Promise<void>((resolve) => emitter.close(() => resolve()))
    },
  }
}

export type EventBus = ReturnType<typeof createEventBus>
