import type { FastifyBaseLogger } from 'fastify'
import mqemitter, { type Message, type MQEmitter } from 'mqemitter'
import { setNewest } from '../newest-entries.js'
import type { SpanEnd, Tracing } from '../telemetry/tracing.js'
import { redisEmitter } from './mqemitter-redis-adapter.js'
import type { RedisConnections } from './redis.js'

export interface LiveSubscriptionOptions {
  /** Events held for a consumer that reads slower than they arrive. */
  maxQueued: number
  /** Called once when the queue passes maxQueued; the subscription has ended by then. */
  onOverflow(): void
}

/**
 * A topic name that carries the type of its events, so a publisher and a subscriber of
 * one topic cannot disagree on what travels on it. Topic names live in one module per
 * domain (`<domain>-topics.ts`).
 */
export type Topic<Event> = string & { readonly event?: Event }

/** The longest a listener of the service waits for Redis to confirm its subscription. */
const LISTEN_WAIT_MS = 1000

/** What encodeURIComponent leaves as it is, but for its `!'()*`. */
const UNENCODED = /^[\w.~-]*$/

/**
 * An id as one level of a topic. Topics are `/`-separated and `+` and `#` are wildcards
 * (mqemitter's rules), so a chat named `+` must not follow every chat; `*`, `?` and `[`
 * are encoded as well, being Redis's pattern characters.
 */
export const topicSegment = (id: string) =>
  // Most ids need no encoding, and this test costs far less than encoding them.
  UNENCODED.test(id)
    ? id
    : encodeURIComponent(id).replace(
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
  tracing,
}: {
  redis?: RedisConnections | undefined
  log: FastifyBaseLogger
  /** When on, a span around each event's delivery, in the trace it was sent in. */
  tracing?: Pick<Tracing, 'startDelivery'> | undefined
}) {
  const emitter: MQEmitter = redis ? redisEmitter(redis) : mqemitter()
  // Deployments that share one Redis share its channels too: each publishes and listens
  // under its own REDIS_KEY_PREFIX, or one's users would receive another's events.
  const namespace = redis ? `${topicSegment(redis.keyPrefix)}/` : ''
  const channelOf = (topic: string) => `${namespace}${topic}`
  const firstArrivals = firstArrivalsOfEvents()
  let active = 0
  let upSince: number | undefined = redis ? undefined : 0
  if (redis)
    watchConnections(redis, (since) => {
      upSince = since
    })

  /**
   * Hands an event to every subscriber of its topic, on every instance; rejects when the
   * bus cannot take it now (Redis away, or silent for a second: redis.ts), so that the
   * caller can try again. Events that must not be lost go through the outbox, which does.
   * The W3C traceparent of the change that caused it, if any, travels with it.
   */
  function deliver<Event>(
    topic: Topic<Event>,
    payload: Event,
    eventId?: number,
    traceparent?: string | null,
  ): Promise<void> {
    const message = {
      topic: channelOf(topic),
      payload,
      eventId,
      ...(traceparent && { traceparent }),
    }
    return new Promise((resolve, reject) => {
      emitter.emit(message, (error) => (error ? reject(error) : resolve()))
    })
  }

  return {
    emitter,
    kind: redis ? ('redis' as const) : ('memory' as const),

    deliver,

    /** Publishes an event that may be lost (a live figure): a failure is only logged. */
    async publish<Event>(topic: Topic<Event>, payload: Event): Promise<void> {
      try {
        await deliver(topic, payload)
      } catch (error) {
        log.warn({ err: error, topic }, 'publish failed')
      }
    },

    /**
     * How long both Redis connections have been up since the last outage, in ms (up
     * for ever in-process, and since the start for the first connection); undefined
     * while one is down.
     */
    upFor: () => (upSince === undefined ? undefined : Date.now() - upSince),

    /** Whether Redis answers within REDIS_TIMEOUT_MS (always, in-process): see redis.ts. */
    answersInTime: () => redis?.answersInTime() ?? true,

    /**
     * The payloads published on `topic` from now on, once the emitter has subscribed.
     * A consumer that falls `maxQueued` events behind is cut off, never buffered
     * without bound.
     */
    async subscribe<Event>(
      topic: Topic<Event>,
      options: LiveSubscriptionOptions,
    ): Promise<AsyncIterableIterator<Event>> {
      const channel = channelOf(topic)
      const queue: Message[] = []
      let waiting: ((result: IteratorResult<Event>) => void) | undefined
      let ended = false
      // The delivery of the event last handed out lasts until the next is asked for.
      let delivering: SpanEnd | undefined
      const handedOut = (message: Message): IteratorResult<Event> => {
        if (tracing) delivering = tracing.startDelivery(topic, message.traceparent)
        return { value: message.payload as Event, done: false }
      }

      const end = () => {
        delivering?.()
        delivering = undefined
        if (ended) return
        ended = true
        active -= 1
        emitter.removeListener(channel, listener)
        waiting?.({ value: undefined, done: true })
        waiting = undefined
        queue.length = 0
      }
      function listener(message: Message, done: () => void) {
        done()
        if (ended) return
        if (!firstArrivals.isFirst(message)) return
        if (waiting) {
          const resolve = waiting
          waiting = undefined
          resolve(handedOut(message))
        } else if (queue.length >= options.maxQueued) {
          end()
          options.onOverflow()
        } else {
          queue.push(message)
        }
      }

      await new Promise<void>((resolve) => emitter.on(channel, listener, resolve))
      active += 1
      const iterator: AsyncIterableIterator<Event> = {
        next: () => {
          delivering?.()
          delivering = undefined
          const queued = queue.shift()
          if (queued !== undefined) return Promise.resolve(handedOut(queued))
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

    /**
     * Calls `onEvent` with each payload published on `topic` from now on, once the
     * emitter has subscribed: for the service's own listeners, which are no GraphQL
     * subscription and are not counted as one. Resolves to the function that stops it:
     * at once, as a subscription's end does, without waiting for Redis to confirm the
     * unsubscription (a Redis that is down never would, and shutdown would hang on it).
     * Nor does it wait past LISTEN_WAIT_MS for the subscription itself: an instance
     * started while Redis is away serves what it can, and the subscriber connection sends
     * the SUBSCRIBE it holds once Redis answers.
     */
    async listen<Event>(
      topic: Topic<Event>,
      onEvent: (payload: Event) => void,
    ): Promise<() => void> {
      const channel = channelOf(topic)
      const listener = (message: Message, done: () => void) => {
        done()
        onEvent(message.payload as Event)
      }
      const subscribed = new Promise<boolean>((resolve) =>
        emitter.on(channel, listener, () => resolve(true)),
      )
      let timer: NodeJS.Timeout | undefined
      const waited = new Promise<boolean>((resolve) => {
        timer = setTimeout(resolve, LISTEN_WAIT_MS, false)
      })
      if (!(await Promise.race([subscribed, waited])))
        log.warn(
          { topic: channel },
          'redis has not confirmed a subscription; listening once it does',
        )
      clearTimeout(timer)
      return () => emitter.removeListener(channel, listener)
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

/**
 * The outbox publishes at least once, so an event may arrive again, as a message of its
 * own. Every listener of an instance is handed the same message object for one arrival,
 * so an instance remembers which message first brought each recent event id, and its
 * listeners take only that one: a repeat reaches no subscriber twice, and events that
 * arrive out of id order (committed out of order) are all delivered.
 */
function firstArrivalsOfEvents(remembered = 4096) {
  const firstMessages = new Map<number, Message>()
  return {
    isFirst(message: Message): boolean {
      // Over Redis an absent id may arrive as null (msgpack has no undefined).
      const { eventId } = message as Message & { eventId?: number | null }
      if (eventId == null) return true
      const first = firstMessages.get(eventId)
      if (first) return first === message
      setNewest(firstMessages, eventId, message, remembered)
      return true
    },
  }
}

/** Reports when both connections are ready (0 the first time) and when either drops. */
function watchConnections(redis: RedisConnections, report: (upSince: number | undefined) => void) {
  let wasUp = false
  const connections = [redis.publisher, redis.subscriber]
  for (const connection of connections) {
    connection.on('close', () => report(undefined))
    connection.on('ready', () => {
      if (!connections.every((each) => each.status === 'ready')) return
      report(wasUp ? Date.now() : 0)
      wasUp = true
    })
  }
}
