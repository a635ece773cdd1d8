import { and, asc, between, eq, lt, sql } from 'drizzle-orm'
import type { Database } from '../../db/database.js'
import { type UploadRow, uploadChunks, uploads } from '../../db/schema.js'

export interface NewUpload {
  ownerId: number
  name: string
  mediaType: string
}

export function createUploadsRepository(db: Database) {
  return {
    async createPending(upload: NewUpload): Promise<UploadRow> {
      const [row] = await db.insert(uploads).values(upload).returning()
      if (!row) throw new Error('INSERT … RETURNING gave no row')
      return row
    },

    async addChunk(uploadId: number, seq: number, bytes: Buffer): Promise<void> {
      await db.insert(uploadChunks).values({ uploadId, seq, bytes })
    },

    async complete(id: number, size: number, sha256: string): Promise<UploadRow> {
      const [row] = await db
        .update(uploads)
        .set({ status: 'complete', size, sha256 })
        .where(eq(uploads.id, id))
        .returning()
      if (!row) throw new Error(`upload ${id} vanished while it was written`)
      return row
    },

    /** Throws an upload away, its chunks with it. */
    async remove(id: number): Promise<void> {
      await db.delete(uploads).where(eq(uploads.id, id))
    },

    async findComplete(id: number): Promise<UploadRow | undefined> {
      const [row] = await db
        .select()
        .from(uploads)
        .where(and(eq(uploads.id, id), eq(uploads.status, 'complete')))
      return row
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

    /** Uploads left pending for longer than `ageMs`: their writer died. */
    async removeAbandoned(ageMs: number): Promise<number> {
      const removed = await db
        .delete(uploads)
        .where(
          and(
            eq(uploads.status, 'pending'),
            lt(uploads.createdAt, sql`now() - ${ageMs} * interval '1 millisecond'`),
          ),
        )
        .returning({ id: uploads.id })
      return removed.length
    },
  }
}

export type UploadsRepository = ReturnType<typeof createUploadsRepository>
