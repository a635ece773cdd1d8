import { asc, inArray, isNull, lt, sql } from 'drizzle-orm'
import type { FastifyBaseLogger } from 'fastify'
import type { Database, Executor } from '../db/client.js'
import { outbox } from '../db/schema.js'
import type { EventBus, Topic } from './events.js'

const BATCH = 100
/** Picks up what an outage or a dead instance left; flushes after commits do the rest. */
const POLL_MS = 1000
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
/** A caller waits for its event to go out at most this long; it goes out later anyway. */
const FLUSH_WAIT_MS = 1000
const STOP_WAIT_MS = 3000
const RETENTION = sql`interval '1 hour'`
const PRUNE_EVERY_MS = 60_000
// Any constant shared by every instance (the migration lock is 72_817_311).
const RELAY_LOCK = 72_817_312

interface OutboxDependencies {
  db: Database
  events: Pick<EventBus, 'deliver' | 'upFor'>
  log: FastifyBaseLogger
}

/**
 * The transactional outbox. A service records its events in the transaction of the
 * change they report, then flushes after the commit: a rolled-back change publishes
 * nothing, and an event is never lost between commit and publish. The relay publishes
 * committed events in id order, one instance at a time, at least once (subscribers drop
 * repeats by event id), and keeps trying while the bus is away.
 */
export function createOutbox({ db, events, log }: OutboxDependencies) {
  let poller: NodeJS.Timeout | undefined
  let queued: Promise<void> | undefined
  let last: Promise<void> = Promise.resolve()
  let failing = false
  let prunedAt = Date.now()

  /** One batch: the number published, or 'busy' when another instance holds the relay. */
  function relayBatch(): Promise<number | 'busy'> {
    return db.transaction(async (tx) => {
      const [lock] = await tx
        .select({ held: sql<boolean>`pg_try_advisory_xact_lock(${RELAY_LOCK})` })
        .from(sql`(select 1) as relay`)
      if (!lock?.held) return 'busy'
      const rows = await tx
        .select()
        .from(outbox)
        .where(isNull(outbox.publishedAt))
        .orderBy(asc(outbox.id))
        .limit(BATCH)
      if (rows.length === 0) return 0
      await Promise.all(rows.map((row) => events.deliver(row.topic, row.payload, row.id)))
      const ids = rows.map((row) => row.id)
      await tx.update(outbox).set({ publishedAt: sql`now()` }).where(inArray(outbox.id, ids))
      return rows.length
    })
  }

  async function drain(): Promise<void> {
    if ((events.upFor() ?? -1) < AFTER_OUTAGE_MS) return
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
      await pruneNowAndThen()
    } catch (error) {
      if (!failing) log.warn({ err: error }, 'the outbox relay cannot publish now; it will retry')
      failing = true
    }
  }

  async function pruneNowAndThen() {
    if (Date.now() - prunedAt < PRUNE_EVERY_MS) return
    prunedAt = Date.now()
    await db.delete(outbox).where(lt(outbox.publishedAt, sql`now() - ${RETENTION}`))
  }

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

  return {
    /** Records an event in the caller's transaction: it is published once that commits. */
    async enqueue<Event>(executor: Executor, topic: Topic<Event>, payload: Event): Promise<void> {
      await executor.insert(outbox).values({ topic, payload })
    },

    /** Publishes what is waiting, after a commit; resolves when done, failed or after a second. */
    flush: () => settledWithin(relaySoon(), FLUSH_WAIT_MS),

    async start() {
      poller = setInterval(relaySoon, POLL_MS)
      poller.unref()
      await relaySoon()
    },

    /** Stops polling and publishes what is left, as far as the bus allows. */
    async stop() {
      clearInterval(poller)
      await settledWithin(relaySoon(), STOP_WAIT_MS)
    },
  }
}

export type Outbox = ReturnType<typeof createOutbox>

function settledWithin(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const waited = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms)
  })
  return Promise.race([work, waited]).finally(() => clearTimeout(timer))
}
