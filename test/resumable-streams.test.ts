import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import type { IdRange } from '../src/db/ordered-scopes.js'
import {
  followInOrder,
  inOrder,
  MAX_REPLAYED,
  type OrderedScope,
  type StreamOrder,
} from '../src/graphql/resumable.js'
import {
  createEventBus,
  type LiveSubscriptionOptions,
  type Topic,
} from '../src/platform/infrastructure/events.js'

/**
 * The ordering of resumable streams, on an in-process bus over a store in memory: what
 * is read when, what a repeat and a gap become, and how a stream ends.
 */

interface Event {
  id: number
  previousId?: number
}

const TOPIC = 'scope/one' as Topic<Event>

/** A scope of `stored` ids, whose reads are logged in `calls`. */
function storeOf(stored: number[], calls: string[]): OrderedScope<string, Event> {
  const eventOf = (id: number): Event => ({ id, previousId: stored[stored.indexOf(id) - 1] ?? 0 })
  return {
    placementOf: ({ id, previousId }) => ({ scope: 'one', id, previousId }),
    async between(_scope, { afterId, beforeId, limit }: IdRange) {
      calls.push(`between ${afterId} ${beforeId ?? '∞'} ${limit}`)
      return stored
        .filter((id) => id > afterId && (beforeId === undefined || id < beforeId))
        .slice(0, limit)
        .map(eventOf)
    },
    async newestId() {
      calls.push('newestId')
      return stored.at(-1) ?? 0
    },
  }
}

function busLoggingTo(calls: string[]) {
  const bus = createEventBus({ log: pino({ level: 'silent' }) })
  return {
    bus,
    events: {
      async subscribe<Item>(topic: Topic<Item>, options: LiveSubscriptionOptions) {
        calls.push('subscribe')
        return bus.subscribe(topic, options)
      },
    },
  }
}

const context = { closeSlowConsumer: () => {} }
const tooLong = () => new Error('too long')

async function take(stream: AsyncIterator<Event>, count: number) {
  const taken = []
  for (let index = 0; index < count; index += 1) taken.push((await stream.next()).value?.id)
  return taken
}

describe('resumable streams', () => {
  it('subscribes to the bus before it reads what followed `after`', async () => {
    const calls: string[] = []
    const { events, bus } = busLoggingTo(calls)
    const stream = await followInOrder(events, TOPIC, context, storeOf([1, 2, 3], calls), {
      start: { scope: 'one', after: 1 },
      tooLong,
    })
    expect(calls).toEqual(['subscribe', `between 1 ∞ ${MAX_REPLAYED + 1}`])
    expect(await take(stream, 2)).toEqual([2, 3])
    await stream.return?.()
    expect(bus.activeSubscriptions()).toBe(0)
  })

  it('reads the newest before subscribing without `after`, and what came meanwhile after', async () => {
    const calls: string[] = []
    const { events } = busLoggingTo(calls)
    const stream = await followInOrder(events, TOPIC, context, storeOf([4, 5], calls), {
      start: { scope: 'one' },
      tooLong,
    })
    expect(calls).toEqual(['newestId', 'subscribe', `between 5 ∞ ${MAX_REPLAYED + 1}`])
    await stream.return?.()
  })

  it('replays exactly MAX_REPLAYED, and refuses one more with its subscription let go', async () => {
    const ids = Array.from({ length: MAX_REPLAYED + 2 }, (_, index) => index + 1)
    const calls: string[] = []
    const { events, bus } = busLoggingTo(calls)
    const store = storeOf(ids, calls)
    const longest = await followInOrder(events, TOPIC, context, store, {
      start: { scope: 'one', after: 2 },
      tooLong,
    })
    expect(await take(longest, MAX_REPLAYED)).toEqual(ids.slice(2))
    await longest.return?.()
    await expect(
      followInOrder(events, TOPIC, context, store, { start: { scope: 'one', after: 1 }, tooLong }),
    ).rejects.toThrow('too long')
    expect(bus.activeSubscriptions()).toBe(0)
  })

  it('drops repeats, and hands out what a live event follows first, read a page at a time', async () => {
    const calls: string[] = []
    const stored = Array.from({ length: 260 }, (_, index) => index + 1)
    const { events, bus } = busLoggingTo(calls)
    const stream = await followInOrder(events, TOPIC, context, storeOf(stored, calls), {
      start: { scope: 'one', after: 1 },
      tooLong,
    })
    await take(stream, 259)
    calls.length = 0
    const next = stream.next()
    // 261 comes, then the 250 after it, the first 249 of which the stream never heard of.
    stored.push(...Array.from({ length: 251 }, (_, index) => 261 + index))
    await bus.deliver(TOPIC, { id: 260, previousId: 259 })
    await bus.deliver(TOPIC, { id: 511, previousId: 510 })
    await bus.deliver(TOPIC, { id: 300, previousId: 299 })
    await bus.deliver(TOPIC, { id: 512, previousId: 511 })
    expect((await next).value?.id).toBe(261)
    expect(await take(stream, 251)).toEqual(Array.from({ length: 251 }, (_, index) => 262 + index))
    expect(calls).toEqual(['between 260 511 100', 'between 360 511 100', 'between 460 511 100'])
    await stream.return?.()
  })

  it('ends at once when let go while it waits for an event', async () => {
    const calls: string[] = []
    const { events, bus } = busLoggingTo(calls)
    const stream = await followInOrder(events, TOPIC, context, storeOf([], calls), {
      start: { scope: 'one' },
      tooLong,
    })
    const waiting = stream.next()
    await stream.return?.()
    expect(await waiting).toEqual({ value: undefined, done: true })
    expect(bus.activeSubscriptions()).toBe(0)
  })

  it('hands out an order that never waits: a later status only, the first of all', async () => {
    const ranks: Record<string, number> = { a: 0, b: 1, c: 2 }
    let last: number | undefined
    const order: StreamOrder<{ status: string }> = {
      place: ({ status }) => (last === undefined || (ranks[status] ?? 0) > last ? 'next' : 'seen'),
      handedOut: ({ status }) => {
        last = ranks[status]
      },
      missedBefore: async () => [],
    }
    const live = (async function* () {
      yield* [{ status: 'a' }, { status: 'c' }, { status: 'b' }, { status: 'c' }]
    })()
    const stream = inOrder(live, [{ status: 'a' }], order)
    const statuses = []
    for await (const event of stream) statuses.push(event.status)
    expect(statuses).toEqual(['a', 'c'])
  })
})
