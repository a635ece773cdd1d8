import { and, gt, lt, type SQL, sql } from 'drizzle-orm'
import type { AnyPgColumn } from 'drizzle-orm/pg-core'

/**
 * The scopes whose ids are drawn in commit order (docs/decisions/commit-ordered-ids.md),
 * each the first key of its transaction-level advisory locks: constants no other lock
 * uses (the migration's and the outbox relay's take one bigint key, a space of their own).
 */
export const SCOPE_LOCKS = { chat: 72_817_313, notificationsOfUser: 72_817_314 } as const

/**
 * Holds the lock of one scope (`key`, an int4) until the transaction ends: taken before
 * the scope's ids are drawn, it makes an insert wait for the one before it to commit.
 */
export const scopeLock = (space: number, key: SQL | number) =>
  sql`pg_advisory_xact_lock(${sql.raw(String(space))}, (${key})::int)`

/** Ids of one scope between two of them (both excluded; no upper bound without `beforeId`). */
export interface IdRange {
  afterId: number
  beforeId?: number | undefined
  limit: number
}

/** The ids of a range, as a condition on a scope's id column. */
export const idsIn = (id: AnyPgColumn, { afterId, beforeId }: IdRange) =>
  and(gt(id, afterId), beforeId === undefined ? undefined : lt(id, beforeId))

/** The newest id of the rows selected, 0 when there are none. */
export const newestIdOf = (id: AnyPgColumn) => sql<number>`coalesce(max(${id}), 0)`.mapWith(Number)
