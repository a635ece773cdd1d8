import { createHash } from 'node:crypto'
import { and, eq, lt, sql } from 'drizzle-orm'
import type { Database, Executor } from '../../db/database.js'
import { idempotencyKeys } from '../../db/schema.js'
import { unprocessable } from '../errors.js'

/** A retry with its key within this long replays the first answer; later, it runs anew. */
const KEPT_FOR = sql`interval '24 hours'`

export interface IdempotentRequest {
  userId: number
  key: string
  /** What the request asked, in a form two equal requests share (see `fingerprint`). */
  body: unknown
}

/** The first answer to a key, as it is replayed. */
export interface StoredAnswer {
  statusCode: number
  body: unknown
}

/**
 * Idempotency-Key, as payment APIs keep it: the first answer to a key is stored in the
 * transaction that made it, so it exists exactly when its effect does. A retry that
 * comes while the first is still running waits on the key's row, then replays.
 */
export function createIdempotencyKeys() {
  return {
    /**
     * Claims the key for this request in the caller's transaction: undefined when it is
     * new (or its answer has expired), the stored answer when the same request came
     * first; the key with another body is UNPROCESSABLE.
     */
    async claim(executor: Executor, request: IdempotentRequest): Promise<StoredAnswer | undefined> {
      const { userId, key } = request
      const ofKey = and(eq(idempotencyKeys.userId, userId), eq(idempotencyKeys.key, key))
      const requestHash = fingerprint(request.body)
      await executor
        .delete(idempotencyKeys)
        .where(and(ofKey, lt(idempotencyKeys.createdAt, sql`now() - ${KEPT_FOR}`)))
      const claimed = await executor
        .insert(idempotencyKeys)
        .values({ userId, key, requestHash })
        .onConflictDoNothing()
        .returning({ key: idempotencyKeys.key })
      if (claimed.length > 0) return undefined
      const [first] = await executor.select().from(idempotencyKeys).where(ofKey)
      if (first?.requestHash !== requestHash) {
        throw unprocessable('This Idempotency-Key was used with another request body')
      }
      // A key is committed only with its answer, in the one transaction.
      if (first.statusCode === null) throw new Error('A committed Idempotency-Key has no answer')
      return { statusCode: first.statusCode, body: first.response }
    },

    /** Stores the answer to a claimed key, in the transaction that claimed it. */
    async remember(executor: Executor, request: IdempotentRequest, answer: StoredAnswer) {
      await executor
        .update(idempotencyKeys)
        .set({ statusCode: answer.statusCode, response: answer.body })
        .where(
          and(eq(idempotencyKeys.userId, request.userId), eq(idempotencyKeys.key, request.key)),
        )
    },

    /** Forgets the expired keys. */
    async prune(db: Database): Promise<void> {
      await db
        .delete(idempotencyKeys)
        .where(lt(idempotencyKeys.createdAt, sql`now() - ${KEPT_FOR}`))
    },
  }
}

export type IdempotencyKeys = ReturnType<typeof createIdempotencyKeys>

const fingerprint = (body: unknown) =>
  createHash('sha256').update(JSON.stringify(body)).digest('base64url')
