import { and, asc, between, count, desc, eq, inArray, lt, sql } from 'drizzle-orm'
import type { Database, Executor } from '../../db/database.js'
import { type UploadRow, uploadChunks, uploads, uploadUsage } from '../../db/schema.js'
import { offsetOf, type PageRequest } from '../../platform/pagination.js'

export interface NewUpload {
  ownerId: number
  name: string
  mediaType: string
}

/** What an owner's uploads take up, to be given back when they go. */
export interface HeldBytes {
  ownerId: number
  size: number
}

const ownComplete = (ownerId: number) =>
  and(eq(uploads.ownerId, ownerId), eq(uploads.status, 'complete'))

export function createUploadsRepository(db: Database) {
  return {
    async createPending(upload: NewUpload): Promise<UploadRow> {
      const [row] = await db.insert(uploads).values(upload).returning()
      if (!row) throw new Error('INSERT … RETURNING gave no row')
      return row
    },

    /** Counts `bytes` more into a pending upload's size; false when it is pending no more. */
    async grow(executor: Executor, id: number, bytes: number): Promise<boolean> {
      const rows = await executor
        .update(uploads)
        .set({ size: sql`${uploads.size} + ${bytes}` })
        .where(and(eq(uploads.id, id), eq(uploads.status, 'pending')))
        .returning({ id: uploads.id })
      return rows.length > 0
    },

    /**
     * Adds `bytes` to the owner's usage if it stays within `quotaBytes` (always without
     * one), in one statement: concurrent reservations of an account queue on its row, and
     * each sees the others' bytes. False when the bytes do not fit.
     */
    async reserve(
      executor: Executor,
      ownerId: number,
      bytes: number,
      quotaBytes: number | undefined,
    ): Promise<boolean> {
      const fits = (used: unknown) =>
        quotaBytes === undefined ? sql`true` : sql`${used} <= ${quotaBytes}`
      const rows = await executor
        .insert(uploadUsage)
        .select(
          sql`select ${ownerId}::integer, ${bytes}::bigint where ${fits(sql`${bytes}::bigint`)}`,
        )
        .onConflictDoUpdate({
          target: uploadUsage.userId,
          set: { usedBytes: sql`${uploadUsage.usedBytes} + excluded.used_bytes` },
          setWhere: fits(sql`${uploadUsage.usedBytes} + excluded.used_bytes`),
        })
        .returning({ userId: uploadUsage.userId })
      return rows.length > 0
    },

    /** Gives back what uploads took from their owners' usage. */
    async release(executor: Executor, held: HeldBytes[]): Promise<void> {
      const byOwner = new Map<number, number>()
      for (const { ownerId, size } of held) byOwner.set(ownerId, (byOwner.get(ownerId) ?? 0) + size)
      for (const [ownerId, size] of byOwner) {
        if (size === 0) continue
        await executor
          .update(uploadUsage)
          .set({ usedBytes: sql`${uploadUsage.usedBytes} - ${size}` })
          .where(eq(uploadUsage.userId, ownerId))
      }
    },

    async addChunk(executor: Executor, uploadId: number, seq: number, bytes: Buffer) {
      await executor.insert(uploadChunks).values({ uploadId, seq, bytes })
    },

    async complete(id: number, sha256: string): Promise<UploadRow> {
      const [row] = await db
        .update(uploads)
        .set({ status: 'complete', sha256 })
        .where(and(eq(uploads.id, id), eq(uploads.status, 'pending')))
        .returning()
      if (!row) throw new Error(`upload ${id} vanished while it was written`)
      return row
    },

    /** Throws an upload away, its chunks with it; what it held, unless it was deleted. */
    async remove(executor: Executor, id: number): Promise<HeldBytes[]> {
      return executor
        .delete(uploads)
        .where(and(eq(uploads.id, id), inArray(uploads.status, ['pending', 'complete'])))
        .returning({ ownerId: uploads.ownerId, size: uploads.size })
    },

    /** Marks a complete upload deleted and drops its chunks; what it held, if it was complete. */
    async markDeleted(executor: Executor, id: number): Promise<HeldBytes | undefined> {
      const [row] = await executor
        .update(uploads)
        .set({ status: 'deleted' })
        .where(and(eq(uploads.id, id), eq(uploads.status, 'complete')))
        .returning({ ownerId: uploads.ownerId, size: uploads.size })
      if (row) await executor.delete(uploadChunks).where(eq(uploadChunks.uploadId, id))
      return row
    },

    /** A complete or deleted upload: undefined while it is pending, or never was. */
    async findStored(id: number): Promise<UploadRow | undefined> {
      const [row] = await db
        .select()
        .from(uploads)
        .where(and(eq(uploads.id, id), inArray(uploads.status, ['complete', 'deleted'])))
      return row
    },

    /** A numbered page of an owner's complete uploads, newest first, and how many in all. */
    async page(ownerId: number, page: PageRequest) {
      const [rows, [counted]] = await Promise.all([
        db
          .select()
          .from(uploads)
          .where(ownComplete(ownerId))
          .orderBy(desc(uploads.id))
          .limit(page.limit)
          .offset(offsetOf(page)),
        db.select({ total: count() }).from(uploads).where(ownComplete(ownerId)),
      ])
      return { rows, total: counted?.total ?? 0 }
    },

    async usedBytes(ownerId: number): Promise<number> {
      const [row] = await db
        .select({ usedBytes: uploadUsage.usedBytes })
        .from(uploadUsage)
        .where(eq(uploadUsage.userId, ownerId))
      return row?.usedBytes ?? 0
    },

    /** The chunks `from` to `to` of an upload, in order. */
    async chunks(uploadId: number, from: number, to: number): Promise<Buffer[]> {
      const rows = await db
        .select({ bytes: uploadChunks.bytes })
        .from(uploadChunks)
        .where(and(eq(uploadChunks.uploadId, uploadId), between(uploadChunks.seq, from, to)))
        .orderBy(asc(uploadChunks.seq))
      return rows.map((row) => row.bytes)
    },

    /** Removes uploads left pending for longer than `ageMs` (their writer died); what they held. */
    async removeAbandoned(executor: Executor, ageMs: number): Promise<HeldBytes[]> {
      return executor
        .delete(uploads)
        .where(
          and(
            eq(uploads.status, 'pending'),
            lt(uploads.createdAt, sql`now() - ${ageMs} * interval '1 millisecond'`),
          ),
        )
        .returning({ ownerId: uploads.ownerId, size: uploads.size })
    },
  }
}

export type UploadsRepository = ReturnType<typeof createUploadsRepository>
