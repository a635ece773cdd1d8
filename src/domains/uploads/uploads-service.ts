import { createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import type { components } from '../../../generated/openapi.js'
import type { Database } from '../../db/database.js'
import type { UploadRow } from '../../db/schema.js'
import { forbidden, gone, notFound, payloadTooLarge } from '../../platform/errors.js'
import type { Principal } from '../../platform/infrastructure/access-tokens.js'
import { type PageRequest, pagePagination } from '../../platform/pagination.js'
import type { ByteRange } from './byte-ranges.js'
import type { UploadsRepository } from './uploads-repository.js'

type Upload = components['schemas']['Upload']
type UploadUsage = components['schemas']['UploadUsage']

/** Every chunk of a file but its last holds exactly this many bytes. */
export const CHUNK_BYTES = 256 * 1024
/** Chunks read per statement when a file is sent back. */
const CHUNKS_PER_READ = 4

export interface IncomingFile {
  name: string
  mediaType: string
  bytes: AsyncIterable<Buffer>
}

interface Dependencies {
  db: Database
  uploads: UploadsRepository
  /** The bytes each user's files may take in all; admins have no quota. */
  quotaBytes: number
}

const overQuota = (quotaBytes: number) =>
  payloadTooLarge(
    `Your files may take at most ${quotaBytes} bytes in all (the upload quota); this one would take them past it`,
  )

export function createUploadsService({ db, uploads, quotaBytes }: Dependencies) {
  const quotaOf = (caller: Principal) => (caller.role === 'admin' ? undefined : quotaBytes)

  /**
   * Stores one chunk, its bytes reserved from the owner's quota first, in one transaction:
   * refused, or failing, it leaves neither the bytes nor their reservation behind.
   */
  const storeChunk = (owner: Principal, uploadId: number) => (seq: number, bytes: Buffer) =>
    db.transaction(async (tx) => {
      // The upload's row first, then the usage row, as every removal locks them.
      if (!(await uploads.grow(tx, uploadId, bytes.length))) {
        throw new Error(`upload ${uploadId} vanished while it was written`)
      }
      if (!(await uploads.reserve(tx, owner.userId, bytes.length, quotaOf(owner)))) {
        throw overQuota(quotaBytes)
      }
      await uploads.addChunk(tx, uploadId, seq, bytes)
    })

  /** Throws an upload away and gives its bytes back to its owner's quota. */
  const remove = (id: number) =>
    db.transaction(async (tx) => uploads.release(tx, await uploads.remove(tx, id)))

  /** A complete or deleted upload its caller may see: their own, or any for an admin. */
  async function findOwn(caller: Principal, id: number): Promise<UploadRow> {
    const row = await uploads.findStored(id)
    if (!row) throw notFound(`No upload ${id}`)
    if (row.ownerId !== caller.userId && caller.role !== 'admin') {
      throw forbidden('This upload belongs to another user')
    }
    if (row.status === 'deleted') throw gone(`Upload ${id} was deleted`)
    return row
  }

  return {
    /**
     * Stores a file as it streams in, chunk by chunk, each reserved from the owner's
     * quota before it is written; nothing of it stays stored, or reserved, if the stream
     * fails (too large, over the quota, cut off) or the database does.
     */
    async store(owner: Principal, file: IncomingFile): Promise<Upload> {
      const pending = await uploads.createPending({
        ownerId: owner.userId,
        name: file.name,
        mediaType: file.mediaType,
      })
      try {
        const sha256 = await writeChunks(file.bytes, storeChunk(owner, pending.id))
        return toUpload(await uploads.complete(pending.id, sha256))
      } catch (error) {
        await remove(pending.id)
        throw error
      }
    },

    async get(caller: Principal, id: number): Promise<Upload> {
      return toUpload(await findOwn(caller, id))
    },

    /** The caller's complete uploads, newest first. */
    async page(caller: Principal, page: PageRequest) {
      const { rows, total } = await uploads.page(caller.userId, page)
      return { items: rows.map(toUpload), pagination: pagePagination(page, total) }
    },

    async usage(caller: Principal): Promise<UploadUsage> {
      return {
        usedBytes: await uploads.usedBytes(caller.userId),
        quotaBytes: quotaOf(caller) ?? null,
      }
    },

    /** Deletes a file for good but for its row, which answers 410; its bytes are free again. */
    async delete(caller: Principal, id: number): Promise<void> {
      await findOwn(caller, id)
      const deleted = await db.transaction(async (tx) => {
        const held = await uploads.markDeleted(tx, id)
        if (held) await uploads.release(tx, [held])
        return held !== undefined
      })
      // Another request deleted it in the meantime.
      if (!deleted) throw gone(`Upload ${id} was deleted`)
    },

    /** The bytes of a range of an upload, read from the database as they are sent. */
    stream(id: number, { start, end }: ByteRange): Readable {
      async function* bytes() {
        const last = Math.floor(end / CHUNK_BYTES)
        for (let seq = Math.floor(start / CHUNK_BYTES); seq <= last; seq += CHUNKS_PER_READ) {
          const chunks = await uploads.chunks(id, seq, Math.min(seq + CHUNKS_PER_READ - 1, last))
          for (const [index, chunk] of chunks.entries()) {
            const offset = (seq + index) * CHUNK_BYTES
            yield chunk.subarray(Math.max(0, start - offset), end - offset + 1)
          }
        }
      }
      return Readable.from(end < start ? [] : bytes(), { objectMode: false })
    },

    remove,

    /** Removes the uploads whose writer died, and gives their bytes back; how many went. */
    removeAbandoned: (ageMs: number) =>
      db.transaction(async (tx) => {
        const removed = await uploads.removeAbandoned(tx, ageMs)
        await uploads.release(tx, removed)
        return removed.length
      }),
  }
}

export type UploadsService = ReturnType<typeof createUploadsService>

type ChunkWriter = (seq: number, bytes: Buffer) => Promise<void>

/** Writes the bytes in CHUNK_BYTES pieces as they come, hashing them; their SHA-256. */
async function writeChunks(bytes: AsyncIterable<Buffer>, write: ChunkWriter): Promise<string> {
  const hash = createHash('sha256')
  let seq = 0
  let buffered: Buffer[] = []
  let bufferedBytes = 0
  for await (const piece of bytes) {
    hash.update(piece)
    buffered.push(piece)
    bufferedBytes += piece.length
    while (bufferedBytes >= CHUNK_BYTES) {
      const joined = Buffer.concat(buffered, bufferedBytes)
      await write(seq++, joined.subarray(0, CHUNK_BYTES))
      const rest = joined.subarray(CHUNK_BYTES)
      buffered = rest.length > 0 ? [rest] : []
      bufferedBytes = rest.length
    }
  }
  if (bufferedBytes > 0) await write(seq, Buffer.concat(buffered, bufferedBytes))
  return hash.digest('hex')
}

function toUpload(row: UploadRow): Upload {
  return {
    id: row.id,
    name: row.name,
    mediaType: row.mediaType,
    size: row.size,
    sha256: row.sha256 ?? '',
    createdAt: row.createdAt.toISOString(),
  }
}
