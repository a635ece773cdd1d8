import type { IdRange } from '../db/ordered-scopes.js'
import type { EventBus, Topic } from '../platform/infrastructure/events.js'
import { setNewest } from '../platform/newest-entries.js'
import type { GraphQLContext } from './context.js'
import { followTopic } from './subscriptions.js'

/** The longest replay a subscription starts with: one that would be longer is refused. */
export const MAX_REPLAYED = 1000
/** Events missed while live are read from the store this many at a time. */
const MISSED_PAGE = 100
/** The scopes an every-scope subscription keeps its place in; an older one starts afresh. */
const SCOPES_KEPT = 4096

/**
 * Whether a live event is the next to hand out, one handed out already, or one that
 * follows events not handed out yet.
 */
export type Place = 'next' | 'seen' | 'gap'

/** How a stream keeps its events in order, and fills in the ones that did not come. */
export interface StreamOrder<Event> {
  place(event: Event): Place
  handedOut(event: Event): void
  /** The first `limit` events missed before `event` (its place being 'gap'), oldest first. */
  missedBefore(event: Event, limit: number): Promise<Event[]>
}

/**
 * `first`, then the live events in order: a repeat is dropped, and an event that comes
 * before the ones it follows waits for them to be read, a page at a time. Ending the
 * stream ends it at once, even while it waits for its next event (an async generator's
 * `return` would wait for that event).
 */
export function inOrder<Event>(
  live: AsyncIterator<Event>,
  first: readonly Event[],
  order: StreamOrder<Event>,
): AsyncIterableIterator<Event> {
  const queue = [...first]
  // A live event whose missed predecessors are being read.
  let awaited: { event: Event } | undefined
  let ended = false
  const end = (): IteratorResult<Event> => {
    ended = true
    queue.length = 0
    awaited = undefined
    return { value: undefined, done: true }
  }

  async function next(): Promise<IteratorResult<Event>> {
    while (!ended) {
      if (queue.length > 0) {
        const event = queue.shift() as Event
        order.handedOut(event)
        return { value: event, done: false }
      }
      if (awaited) {
        const { event } = awaited
        const missed = await order.missedBefore(event, MISSED_PAGE)
        if (ended) break
        queue.push(...missed)
        if (missed.length < MISSED_PAGE) {
          queue.push(event)
          awaited = undefined
        }
        continue
      }
      const arrived = await live.next()
      if (arrived.done) return end()
      const place = order.place(arrived.value)
      if (place === 'next') queue.push(arrived.value)
      else if (place === 'gap') awaited = { event: arrived.value }
    }
    return end()
  }

  const stream: AsyncIterableIterator<Event> = {
    next,
    async return() {
      const result = end()
      await live.return?.()
      return result
    },
    async throw(error) {
      end()
      await live.return?.()
      throw error
    },
    [Symbol.asyncIterator]: () => stream,
  }
  return stream
}

/** Where an event stands in its scope (a chat, a user's notifications). */
export interface Placement<Scope> {
  scope: Scope
  id: number
  /** The id of the scope's event before it, 0 before its first; unknown when absent. */
  previousId: number | undefined
}

/** A scope whose ids ascend in commit order, as its store and its events tell it. */
export interface OrderedScope<Scope, Event> {
  placementOf(event: Event): Placement<Scope>
  /** The scope's stored events in the range, oldest first, as the bus carries them. */
  between(scope: Scope, range: IdRange): Promise<Event[]>
  /** The id of the scope's newest stored event, 0 when it has none. */
  newestId(scope: Scope): Promise<number>
}

/** Where a subscription starts: in one scope, after one of its ids, or from its newest. */
export interface Start<Scope> {
  scope: Scope
  after?: number | undefined
}

/**
 * The live events of `topic` after what `begin` reads, in the order `begin` gives: the
 * bus is subscribed to before it reads, so no event falls between the two (one committed
 * before the read is in what it read, and dropped as seen when it comes live; one
 * committed after comes live). What `begin` throws refuses the subscription.
 */
export async function followFromRead<Event>(
  events: Pick<EventBus, 'subscribe'>,
  topic: Topic<Event>,
  context: Pick<GraphQLContext, 'closeSlowConsumer'>,
  begin: () => Promise<{ first: readonly Event[]; order: StreamOrder<Event> }>,
): Promise<AsyncIterableIterator<Event>> {
  const live = await followTopic(events, topic, context)
  try {
    const { first, order } = await begin()
    return inOrder(live, first, order)
  } catch (error) {
    await live.return?.()
    throw error
  }
}

/**
 * The events of `topic` in id order within each scope, each once. With `start`, first
 * the scope's stored events after `start.after`, at most MAX_REPLAYED (more are refused
 * with `tooLong`, before any is sent), then the live ones. Without `after` the stream
 * starts after the scope's newest event as the subscription is asked for: read before
 * the bus is subscribed to, so that what commits meanwhile is read after. A live event
 * that comes before one it follows (events cross instances and the outbox's relay in any
 * order) has the store read for what it follows. Without `start` (a subscription to
 * every scope) each scope's order starts with the first of its events the stream receives.
 */
export async function followInOrder<Scope, Event>(
  events: Pick<EventBus, 'subscribe'>,
  topic: Topic<Event>,
  context: Pick<GraphQLContext, 'closeSlowConsumer'>,
  ordered: OrderedScope<Scope, Event>,
  { start, tooLong }: { start?: Start<Scope> | undefined; tooLong: () => Error },
): Promise<AsyncIterableIterator<Event>> {
  if (!start) {
    return followFromRead(events, topic, context, async () => ({
      first: [],
      order: scopeOrder(ordered, new Map()),
    }))
  }
  const { scope } = start
  const afterId = start.after ?? (await ordered.newestId(scope))
  return followFromRead(events, topic, context, async () => {
    const stored = await ordered.between(scope, { afterId, limit: MAX_REPLAYED + 1 })
    if (start.after !== undefined && stored.length > MAX_REPLAYED) throw tooLong()
    // Committed while the bus was subscribed to, past the bound: read as missed ones are.
    const first = stored.slice(0, MAX_REPLAYED)
    return { first, order: scopeOrder(ordered, new Map([[scope, afterId]])) }
  })
}

/** Each scope's events in id order, from the last id handed out in it (`places`). */
function scopeOrder<Scope, Event>(
  ordered: OrderedScope<Scope, Event>,
  places: Map<Scope, number>,
): StreamOrder<Event> {
  return {
    place(event) {
      const { scope, id, previousId } = ordered.placementOf(event)
      const last = places.get(scope)
      if (last === undefined) return 'next'
      if (id <= last) return 'seen'
      return previousId === last ? 'next' : 'gap'
    },
    handedOut(event) {
      const { scope, id } = ordered.placementOf(event)
      setNewest(places, scope, id, SCOPES_KEPT)
    },
    async missedBefore(event, limit) {
      const { scope, id } = ordered.placementOf(event)
      const last = places.get(scope)
      // A scope forgotten meanwhile (see SCOPES_KEPT) starts afresh with this event.
      if (last === undefined) return []
      return ordered.between(scope, { afterId: last, beforeId: id, limit })
    },
  }
}
