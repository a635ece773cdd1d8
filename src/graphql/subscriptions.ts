import type { Resolvers } from '../../generated/graphql.js'
import type { EventBus, Topic } from '../platform/events.js'
import type { GraphQLContext } from './context.js'
import { LIMITS, limitError } from './limits.js'

export const TOO_MANY_SUBSCRIPTIONS = 'TOO_MANY_SUBSCRIPTIONS'

/** Events held for one subscriber before it counts as too slow and is cut off. */
const MAX_QUEUED_EVENTS = 1000

/** A subscriber's events of one topic; one that falls too far behind loses its socket. */
export function followTopic<Event>(
  events: Pick<EventBus, 'subscribe'>,
  topic: Topic<Event>,
  context: Pick<GraphQLContext, 'closeSlowConsumer'>,
) {
  return events.subscribe(topic, {
    maxQueued: MAX_QUEUED_EVENTS,
    onOverflow: () => context.closeSlowConsumer?.(),
  })
}

/**
 * The live subscriptions of one WebSocket, whichever subprotocol carries them. They are
 * counted where they really start and end (the event streams), not from the protocol's
 * messages: a legacy client can stop an operation before Mercurius has started it, or
 * reuse a live id, and Mercurius then runs a stream it no longer tracks.
 */
export function createLiveSubscriptions(max = LIMITS.subscriptionsPerSocket) {
  const live = new Set<AsyncIterator<unknown>>()
  let starting = 0

  return {
    /** Starts a stream, or refuses it while the socket holds `max`. */
    async open<Event>(start: () => Promise<AsyncIterator<Event>>): Promise<AsyncIterator<Event>> {
      if (live.size + starting >= max) {
        throw limitError(
          `This socket already runs ${max} subscriptions; complete one before starting another`,
          TOO_MANY_SUBSCRIPTIONS,
        )
      }
      starting += 1
      let stream: AsyncIterator<Event>
      try {
        stream = await start()
      } finally {
        starting -= 1
      }
      live.add(stream)
      return counted(stream, () => live.delete(stream))
    },

    /** Ends every stream of the socket, those its protocol library lost track of too. */
    closeAll() {
      for (const stream of live) void stream.return?.()
      live.clear()
    },
  }
}

export type LiveSubscriptions = ReturnType<typeof createLiveSubscriptions>

/** The stream, calling `ended` when it finishes or its consumer lets it go (again is harmless). */
function counted<Event>(
  stream: AsyncIterator<Event>,
  ended: () => void,
): AsyncIterableIterator<Event> {
  const settle = (step: Promise<IteratorResult<Event>>) =>
    step.then(
      (result) => {
        if (result.done) ended()
        return result
      },
      (error) => {
        ended()
        throw error
      },
    )
  const iterator: AsyncIterableIterator<Event> = {
    next: () => settle(stream.next()),
    return: (value) => {
      ended()
      return stream.return ? stream.return(value) : Promise.resolve({ value, done: true })
    },
    throw: (error) => {
      ended()
      return stream.throw ? stream.throw(error) : Promise.reject(error)
    },
    [Symbol.asyncIterator]: () => iterator,
  }
  return iterator
}

type SubscriptionResolvers = Resolvers['Subscription']
type SubscriptionField = {
  subscribe: (root: unknown, args: unknown, context: GraphQLContext, info: unknown) => unknown
}

/**
 * Every subscription field, counted against its socket's live subscriptions. HTTP has
 * no socket and no subscriptions, so a context without a count passes as it is.
 */
export function countedSubscriptions(resolvers: SubscriptionResolvers): SubscriptionResolvers {
  const fields = Object.entries((resolvers ?? {}) as Record<string, SubscriptionField>).map(
    ([name, field]) => {
      const subscribe: SubscriptionField['subscribe'] = (root, args, context, info) => {
        const start = async () =>
          (await field.subscribe(root, args, context, info)) as AsyncIterator<unknown>
        return context.subscriptions ? context.subscriptions.open(start) : start()
      }
      return [name, { ...field, subscribe }]
    },
  )
  return Object.fromEntries(fields) as SubscriptionResolvers
}
