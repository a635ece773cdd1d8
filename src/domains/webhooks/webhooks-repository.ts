import { and, count, desc, eq, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm'
import type { Database, Executor } from '../../db/database.js'
import {
  webhookEndpointDeliveries as deliveries,
  webhookEndpoints as endpoints,
  webhookEvents as events,
  type WebhookDeliveryRow,
  type WebhookEndpointRow,
} from '../../db/schema.js'
import { rowsOf } from '../../db/statement-rows.js'
import { offsetOf, type PageRequest } from '../../platform/pagination.js'
import type { WebhookEvent, WebhookEventType } from './webhook-events.js'

export interface NewEndpoint {
  url: string
  events: WebhookEventType[]
  description: string | null
  sealedSecret: string
}

export type EndpointChanges = Partial<
  Pick<WebhookEndpointRow, 'url' | 'events' | 'description' | 'enabled'>
>

/** A delivery with what its attempt sends: the endpoint's target and secret, the event. */
export interface ClaimedDelivery {
  id: number
  endpointId: number
  attempts: number
  attemptsAllowed: number
  url: string
  sealedSecret: string
  eventId: string
  type: WebhookEventType
  data: unknown
  occurredAt: Date
}

/** What an attempt came to, as the delivery log records it. */
export interface AttemptRecord {
  statusCode: number | null
  error: string | null
}

/** Runs of failed attempts longer than this disable an endpoint. */
const DISABLE_AFTER = sql`interval '5 days'`

const deliveryColumns = {
  id: deliveries.id,
  eventId: deliveries.eventId,
  type: events.type,
  status: deliveries.status,
  attempts: deliveries.attempts,
  lastStatusCode: deliveries.lastStatusCode,
  lastError: deliveries.lastError,
  nextAttemptAt: deliveries.nextAttemptAt,
}
export type DeliveryLogRow = Pick<
  WebhookDeliveryRow,
  'id' | 'eventId' | 'status' | 'attempts' | 'lastStatusCode' | 'lastError' | 'nextAttemptAt'
> & { type: WebhookEventType }

export function createWebhooksRepository(db: Database) {
  /** Updates a delivery only while the claim of its `attempts`th attempt holds it. */
  const whileClaimed = (delivery: ClaimedDelivery) =>
    and(eq(deliveries.id, delivery.id), eq(deliveries.attempts, delivery.attempts))

  /** Counts a failed attempt against its endpoint: 5 days of them in a row disable it. */
  async function failingEndpoint(executor: Executor, endpointId: number) {
    const streakStart = sql`coalesce(${endpoints.failingSince}, now())`
    const [endpoint] = await executor
      .update(endpoints)
      .set({
        failingSince: streakStart,
        enabled: sql`${endpoints.enabled} and ${streakStart} > now() - ${DISABLE_AFTER}`,
      })
      .where(eq(endpoints.id, endpointId))
      .returning({ enabled: endpoints.enabled })
    return endpoint
  }

  return {
    async insertEndpoint(endpoint: NewEndpoint): Promise<WebhookEndpointRow> {
      const [row] = await db.insert(endpoints).values(endpoint).returning()
      if (!row) throw new Error('INSERT … RETURNING gave no row')
      return row
    },

    async findEndpoint(id: number): Promise<WebhookEndpointRow | undefined> {
      const [row] = await db.select().from(endpoints).where(eq(endpoints.id, id))
      return row
    },

    /** A numbered page, newest first, and how many there are in all. */
    async pageEndpoints(page: PageRequest) {
      const [rows, [counted]] = await Promise.all([
        db
          .select()
          .from(endpoints)
          .orderBy(desc(endpoints.createdAt), desc(endpoints.id))
          .limit(page.limit)
          .offset(offsetOf(page)),
        db.select({ total: count() }).from(endpoints),
      ])
      return { items: rows, total: counted?.total ?? 0 }
    },

    /** Changes an endpoint; enabling it ends its run of failures. Undefined when none. */
    async updateEndpoint(id: number, changes: EndpointChanges) {
      const [row] = await db
        .update(endpoints)
        .set({
          ...changes,
          ...(changes.enabled && { failingSince: null }),
          updatedAt: sql`now()`,
        })
        .where(eq(endpoints.id, id))
        .returning()
      return row
    },

    /** Removes an endpoint and its delivery log; false when there is none. */
    async deleteEndpoint(id: number): Promise<boolean> {
      const rows = await db
        .delete(endpoints)
        .where(eq(endpoints.id, id))
        .returning({ id: endpoints.id })
      return rows.length > 0
    },

    /**
     * Records the events that an enabled endpoint is to receive, each with one delivery
     * per such endpoint, in the caller's transaction (the outbox's). Events no endpoint
     * wants are not kept. The number of deliveries made.
     */
    async recordEvents(
      executor: Executor,
      given: readonly WebhookEvent[],
      attemptsAllowed: number,
    ): Promise<number> {
      const rows = JSON.stringify(
        given.map(({ type, data, occurredAt }) => ({ type, data, occurred_at: occurredAt })),
      )
      const result = await executor.execute(sql`
        with given as (
          select * from json_to_recordset(${rows}::text::json)
            as e(type webhook_event_type, data jsonb, occurred_at timestamptz)
        ), wanted as (
          select * from given
          where exists (
            select 1 from ${endpoints}
            where ${endpoints.enabled} and given.type = any(${endpoints.events})
          )
        ), recorded as (
          insert into ${events} (type, data, occurred_at)
          select type, data, occurred_at from wanted
          returning id, type
        )
        insert into ${deliveries} (endpoint_id, event_id, attempts_allowed)
        select ${endpoints.id}, recorded.id, ${attemptsAllowed}::int
        from recorded join ${endpoints}
          on ${endpoints.enabled} and recorded.type = any(${endpoints.events})
        on conflict do nothing
        returning id`)
      return rowsOf(result).length
    },

    /**
     * Up to `limit` deliveries due to enabled endpoints, with their attempt counted and a
     * lease of `leaseMs`, in one statement. Rows another instance is claiming are skipped,
     * not waited for; a delivery whose lease ran out (its instance died mid-attempt) is
     * due again.
     */
    async claimDue(limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
      const due = db
        .select({ id: deliveries.id })
        .from(deliveries)
        .innerJoin(endpoints, eq(endpoints.id, deliveries.endpointId))
        .where(
          and(
            eq(deliveries.status, 'pending'),
            lte(deliveries.nextAttemptAt, sql`now()`),
            or(isNull(deliveries.leaseEndsAt), lt(deliveries.leaseEndsAt, sql`now()`)),
            eq(endpoints.enabled, true),
          ),
        )
        .orderBy(deliveries.nextAttemptAt, deliveries.id)
        .limit(limit)
        .for('update', { of: deliveries, skipLocked: true })
      const claimed = await db
        .update(deliveries)
        .set({
          attempts: sql`${deliveries.attempts} + 1`,
          leaseEndsAt: sql`now() + ${leaseMs} * interval '1 millisecond'`,
        })
        .where(inArray(deliveries.id, due))
        .returning({ id: deliveries.id })
      if (claimed.length === 0) return []
      return db
        .select({
          id: deliveries.id,
          endpointId: deliveries.endpointId,
          attempts: deliveries.attempts,
          attemptsAllowed: deliveries.attemptsAllowed,
          url: endpoints.url,
          sealedSecret: endpoints.sealedSecret,
          eventId: events.id,
          type: events.type,
          data: events.data,
          occurredAt: events.occurredAt,
        })
        .from(deliveries)
        .innerJoin(endpoints, eq(endpoints.id, deliveries.endpointId))
        .innerJoin(events, eq(events.id, deliveries.eventId))
        .where(
          inArray(
            deliveries.id,
            claimed.map(({ id }) => id),
          ),
        )
    },

    /** A 2xx: the delivery is done, and its endpoint's run of failures over. */
    async succeeded(delivery: ClaimedDelivery, statusCode: number): Promise<void> {
      await db.transaction(async (tx) => {
        const rows = await tx
          .update(deliveries)
          .set({
            status: 'succeeded',
            lastStatusCode: statusCode,
            lastError: null,
            leaseEndsAt: null,
          })
          .where(whileClaimed(delivery))
          .returning({ id: deliveries.id })
        if (rows.length === 0) return
        await tx
          .update(endpoints)
          .set({ failingSince: null })
          .where(eq(endpoints.id, delivery.endpointId))
      })
    },

    /**
     * A failed attempt: the next is due in `retryInMs`, or, without one, the delivery has
     * failed. Whether the endpoint is still enabled afterwards.
     */
    async failed(
      delivery: ClaimedDelivery,
      attempt: AttemptRecord,
      retryInMs: number | undefined,
    ): Promise<boolean> {
      return db.transaction(async (tx) => {
        const rows = await tx
          .update(deliveries)
          .set({
            status: retryInMs === undefined ? 'failed' : 'pending',
            lastStatusCode: attempt.statusCode,
            lastError: attempt.error,
            leaseEndsAt: null,
            ...(retryInMs !== undefined && {
              nextAttemptAt: sql`now() + ${retryInMs} * interval '1 millisecond'`,
            }),
          })
          .where(whileClaimed(delivery))
          .returning({ id: deliveries.id })
        if (rows.length === 0) return true
        return (await failingEndpoint(tx, delivery.endpointId))?.enabled ?? false
      })
    },

    /** An attempt cut short by a shutdown: not counted, and due again for any instance. */
    async release(delivery: ClaimedDelivery): Promise<void> {
      await db
        .update(deliveries)
        .set({ attempts: sql`${deliveries.attempts} - 1`, leaseEndsAt: null })
        .where(whileClaimed(delivery))
    },

    /** An endpoint's deliveries, newest first, and how many it has in all. */
    async pageDeliveries(endpointId: number, page: PageRequest) {
      const [rows, [counted]] = await Promise.all([
        db
          .select(deliveryColumns)
          .from(deliveries)
          .innerJoin(events, eq(events.id, deliveries.eventId))
          .where(eq(deliveries.endpointId, endpointId))
          .orderBy(desc(deliveries.id))
          .limit(page.limit)
          .offset(offsetOf(page)),
        db.select({ total: count() }).from(deliveries).where(eq(deliveries.endpointId, endpointId)),
      ])
      return { items: rows as DeliveryLogRow[], total: counted?.total ?? 0 }
    },

    /**
     * Makes a delivery pending and due now, with one attempt more than it has made, unless
     * an attempt holds it at this moment. Undefined when the endpoint has no such delivery.
     */
    async retry(endpointId: number, deliveryId: number): Promise<DeliveryLogRow | undefined> {
      const ofEndpoint = and(eq(deliveries.id, deliveryId), eq(deliveries.endpointId, endpointId))
      await db
        .update(deliveries)
        .set({
          status: 'pending',
          nextAttemptAt: sql`now()`,
          attemptsAllowed: sql`greatest(${deliveries.attemptsAllowed}, ${deliveries.attempts} + 1)`,
        })
        .where(
          and(
            ofEndpoint,
            or(isNull(deliveries.leaseEndsAt), lt(deliveries.leaseEndsAt, sql`now()`)),
          ),
        )
      const [row] = await db
        .select(deliveryColumns)
        .from(deliveries)
        .innerJoin(events, eq(events.id, deliveries.eventId))
        .where(ofEndpoint)
      return row as DeliveryLogRow | undefined
    },
  }
}

export type WebhooksRepository = ReturnType<typeof createWebhooksRepository>
