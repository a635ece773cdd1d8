import { asc, inArray, lt, sql } from 'drizzle-orm'
import type { FastifyBaseLogger } from 'fastify'
import type { Database, Executor } from '../../db/database.js'
import { type OutboxRow, outbox } from '../../db/schema.js'
import type { Tracing } from '../telemetry/tracing.js'
import type { EventBus, Topic } from './events.js'

const BATCH = 100
/** Picks up what an outage or a dead instance left; the publish after a commit does the rest. */
const POLL_MS = 1000
/**
 * The relay leaves an event this young to the instance that committed it, which
 * publishes it at once and deletes it a moment later; older and still there, it was
 * lost to a crash or an outage.
 */
const STRAGGLER_AGE = sql`interval '2 seconds'`
/** Events published after their commit are deleted in batches, this often. */
const DELETE_EVERY_MS = 100
/** Another instance is relaying: try again shortly, its batch may have missed ours. */
const BUSY_RETRY_MS = 5
const BUSY_RETRIES = 20
/**
 * After Redis comes back, other instances' subscriber connections need a moment to
 * reconnect (their backoff is at most 2 s); an event published before that is lost to
 * them, as Redis keeps no messages. So nothing is published until the bus has been up
 * this long.
 */
const AFTER_OUTAGE_MS = 2500
const STOP_WAIT_MS = 3000
// Any constant shared by every instance (the migration lock is 72_817_311).
const RELAY_LOCK = 72_817_312

/** An event written in a transaction, to publish once that has committed. */
export interface PendingEvent<Event = unknown> {
  id: number
  topic: Topic<Event>
  payload: Event
  /** The change's trace, when tracing is on. */
  traceparent?: string | undefined
}

/**
 * A consumer that must not miss one event of its topics, nor take one twice (outgoing
 * webhooks): it is handed them in the transaction that deletes them, once published,
 * and a failure of its own leaves them in the outbox, for the relay to publish again.
 */
export interface OutboxTap {
  wants(topic: string): boolean
  take(executor: Executor, events: readonly OutboxRow[]): Promise<void>
  /** Once what `take` wrote has committed. */
  afterCommit?(): void
}

interface OutboxDependencies {
  db: Database
  /** REDIS_TIMEOUT_MS: how long a request waits for its events to be published. */
  publishWaitMs: number
  events: Pick<EventBus, 'deliver' | 'upFor' | 'answersInTime'>
  log: FastifyBaseLogger
  /** When on, each event keeps the trace context of the change that caused it. */
  tracing?: Pick<Tracing, 'traceparent'> | undefined
}

/**
 * The transactional outbox. A service records its events in the transaction of the
 * change they report, and publishes them after the commit: a rolled-back change
 * publishes nothing, and an event is never lost between commit and publish, as the
 * relay publishes what a crash or an outage left. At least once (subscribers drop
 * repeats by event id); one instance relays at a time.
 */
export function createOutbox({ db, publishWaitMs, events, log, tracing }: OutboxDependencies) {
  let poller: NodeJS.Timeout | undefined
  let queued: Promise<void> | undefined
  let last: Promise<void> = Promise.resolve()
  let failing = false
  const taps: OutboxTap[] = []
  const published = publishedDeletions(db, log, taps)

  /** One batch: the number published, or 'busy' when another instance holds the relay. */
  async function relayBatch(): Promise<number | 'busy'> {
    const tookThem: OutboxTap[] = []
    const relayed = await db.transaction(async (tx) => {
      const [lock] = await tx
        .select({ held: sql<boolean>`pg_try_advisory_xact_lock(${RELAY_LOCK})` })
        .from(sql`(select 1) as relay`)
      if (!lock?.held) return 'busy'
      const rows = await tx
        .select()
        .from(outbox)
        .where(lt(outbox.createdAt, sql`now() - ${STRAGGLER_AGE}`))
        .orderBy(asc(outbox.id))
        .limit(BATCH)
      const notPublishedHere = rows.filter((row) => !published.pending(row.id))
      await Promise.all(
        notPublishedHere.map((row) =>
          events.deliver(row.topic, row.payload, row.id, row.traceparent),
        ),
      )
      if (rows.length > 0) {
        const ids = rows.map((row) => row.id)
        const deleted = await tx.delete(outbox).where(inArray(outbox.id, ids)).returning()
        tookThem.push(...(await handToTaps(taps, tx, deleted)))
      }
      return rows.length
    })
    for (const tap of tookThem) tap.afterCommit?.()
    return relayed
  }

  async function drain(): Promise<void> {
    if (!busUp()) return
    try {
      let busy = 0
      for (;;) {
        const relayed = await relayBatch()
        if (relayed === 'busy' && ++busy <= BUSY_RETRIES) {
          await new Promise((resolve) => setTimeout(resolve, BUSY_RETRY_MS))
        } else if (relayed !== BATCH) break
      }
      if (failing) log.info('the outbox relay publishes again')
      failing = false
    } catch (error) {
      if (!failing) log.warn({ err: error }, 'the outbox relay cannot publish now; it will retry')
      failing = true
    }
  }

  const busUp = () => (events.upFor() ?? -1) >= AFTER_OUTAGE_MS

  /** Relays what is waiting; concurrent calls share the next relay that has not begun. */
  function relaySoon(): Promise<void> {
    if (!queued) {
      queued = last.then(() => {
        queued = undefined
        return drain()
      })
      last = queued
    }
    return queued
  }

  /**
   * Publishes committed events now; one the bus refuses is left to the relay, and so is
   * every one while Redis is slow: the request that committed them does not wait on it.
   */
  async function publishNow(pending: readonly PendingEvent[]): Promise<void> {
    if (!busUp() || !events.answersInTime()) return
    // What Redis has not taken by the deadline goes on without the request.
    await settledWithin(publishInOrder(pending), publishWaitMs)
  }

  async function publishInOrder(pending: readonly PendingEvent[]): Promise<void> {
    for (const event of pending) {
      try {
        await events.deliver(event.topic, event.payload, event.id, event.traceparent)
        published.add(event.id, event.topic)
      } catch {
        return
      }
    }
  }

  return {
    /** Records an event in the caller's transaction; publish it once that commits. */
    async enqueue<Event>(executor: Executor, topic: Topic<Event>, payload: Event) {
      const traceparent = tracing?.traceparent()
      const [row] = await executor
        .insert(outbox)
        .values({ topic, payload, traceparent })
        .returning({ id: outbox.id })
      if (!row) throw new Error('INSERT … RETURNING gave no row')
      return { id: row.id, topic, payload, traceparent } satisfies PendingEvent<Event>
    },

    /** Has `tap` take its topics' events from now on (a module does, as it is made). */
    tap(tap: OutboxTap): void {
      taps.push(tap)
    },

    /** The trace context an event recorded now keeps (undefined when tracing is off). */
    traceparent: () => tracing?.traceparent(),

    /**
     * Publishes events after their commit, in order; resolves when done, failed, or
     * REDIS_TIMEOUT_MS has passed, whichever comes first.
     */
    publish: publishNow,

    async start() {
      poller = setInterval(relaySoon, POLL_MS)
      poller.unref()
      published.start()
      await relaySoon()
    },

    /** Stops polling, deletes what went out, and publishes what is left, as far as the bus allows. */
    async stop() {
      clearInterval(poller)
      await published.stop()
      await settledWithin(relaySoon(), STOP_WAIT_MS)
    },
  }
}

/**
 * The ids published after their commit, deleted in one statement per batch rather than
 * one per event. Should deleting fail, the relay publishes them again later, which
 * subscribers take as the repeats they are.
 */
function publishedDeletions(db: Database, log: FastifyBaseLogger, taps: readonly OutboxTap[]) {
  // Each id with its topic: a batch no tap wants is deleted without a transaction.
  let waiting = new Map<number, string>()
  let deleting = new Map<number, string>()
  let timer: NodeJS.Timeout | undefined
  // The ids go as one array: drizzle's IN list built a parameter apiece, a batch's
  // hundreds of them, on every sendMessage's delete. It is written as an array
  // literal, which needs none of the array types the driver does not fetch (postgres.ts).
  const deletePublished = db
    .delete(outbox)
    .where(sql`${outbox.id} = any(${sql.placeholder('ids')}::bigint[])`)
    .prepare('outbox_delete_published')

  async function deleteWaiting() {
    if (waiting.size === 0) return
    deleting = waiting
    waiting = new Map()
    const ids = `{${[...deleting.keys()].join(',')}}`
    const tapped = [...deleting.values()].some((topic) => taps.some((tap) => tap.wants(topic)))
    try {
      if (!tapped) await deletePublished.execute({ ids })
      else {
        const tookThem = await db.transaction(async (tx) => {
          const deleted = await tx
            .delete(outbox)
            .where(sql`${outbox.id} = any(${ids}::bigint[])`)
            .returning()
          return handToTaps(taps, tx, deleted)
        })
        for (const tap of tookThem) tap.afterCommit?.()
      }
    } catch (error) {
      log.warn({ err: error }, 'published events could not be deleted; the relay will repeat them')
    } finally {
      deleting = new Map()
    }
  }

  return {
    add: (id: number, topic: string) => waiting.set(id, topic),
    /** Published here and not deleted yet: not the relay's to publish. */
    pending: (id: number) => waiting.has(id) || deleting.has(id),
    start() {
      timer = setInterval(deleteWaiting, DELETE_EVERY_MS)
      timer.unref()
    },
    async stop() {
      clearInterval(timer)
      await deleteWaiting()
    },
  }
}

export type Outbox = ReturnType<typeof createOutbox>

/**
 * Hands each tap the deleted events it wants, in the deleting transaction (so only rows
 * this one deleted); the taps that took some.
 */
async function handToTaps(
  taps: readonly OutboxTap[],
  tx: Executor,
  deleted: OutboxRow[],
): Promise<OutboxTap[]> {
  const took: OutboxTap[] = []
  for (const tap of taps) {
    const wanted = deleted.filter((row) => tap.wants(row.topic))
    if (wanted.length === 0) continue
    await tap.take(tx, wanted)
    took.push(tap)
  }
  return took
}

function settledWithin(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const waited = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms)
  })
  return Promise.race([work, waited]).finally(() => clearTimeout(timer))
}
