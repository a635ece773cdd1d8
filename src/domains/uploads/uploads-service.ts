import { createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import type { components } from '../../../generated/openapi.js'
import type { UploadRow } from '../../db/schema.js'
import { forbidden, notFound } from '../../platform/errors.js'
import type { Principal } from '../../platform/infrastructure/access-tokens.js'
import type { ByteRange } from './byte-ranges.js'
import type { UploadsRepository } from './uploads-repository.js'

type Upload = components['schemas']['Upload']

/** Every chunk of a file but its last holds exactly this many bytes. */
export const CHUNK_BYTES = 256 * 1024
/** Chunks read per statement when a file is sent back. */
const CHUNKS_PER_READ = 4

export interface IncomingFile {
  name: string
  mediaType: string
  bytes: AsyncIterable<Buffer>
}

export function createUploadsService(uploads: UploadsRepository) {
  return {
    /**
     * Stores a file as it streams in, chunk by chunk; nothing of it stays stored if the
     * stream fails (too large, cut off) or the database does.
     */
    async store(owner: Principal, file: IncomingFile): Promise<Upload> {
      const pending = await uploads.createPending({
        ownerId: owner.userId,
        name: file.name,
        mediaType: file.mediaType,
      })
      try {
        const { size, sha256 } = await writeChunks(uploads, pending.id, file.bytes)
        return toUpload(await uploads.complete(pending.id, size, sha256))
      } catch (error) {
        await uploads.remove(pending.id)
        throw error
      }
    },

    /** A complete upload its caller may read: their own, or any for an admin. */
    async get(caller: Principal, id: number): Promise<UploadRow & Upload> {
      const row = await uploads.findComplete(id)
      if (!row) throw notFound(`No upload ${id}`)
      if (row.ownerId !== caller.userId && caller.role !== 'admin') {
        throw forbidden('This upload belongs to another user')
      }
      return { ...row, ...toUpload(row) }
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

    remove: (id: number) => uploads.remove(id),
    removeAbandoned: (ageMs: number) => uploads.removeAbandoned(ageMs),
  }
}

export type UploadsService = ReturnType<typeof createUploadsService>

/** Writes the bytes in CHUNK_BYTES pieces as they come, hashing and counting them. */
async function writeChunks(uploads: UploadsRepository, id: number, bytes: AsyncIterable<Buffer>) {
  const hash = createHash('sha256')
  let size = 0
  let seq = 0
  let buffered: Buffer[] = []
  let bufferedBytes = 0
  for await (const piece of bytes) {
    hash.update(piece)
    size += piece.length
    buffered.push(piece)
    bufferedBytes += piece.length
    while (bufferedBytes >= CHUNK_BYTES) {
      const joined = Buffer.concat(buffered, bufferedBytes)
      await uploads.addChunk(id, seq++, joined.subarray(0, CHUNK_BYTES))
      const rest = joined.subarray(CHUNK_BYTES)
      buffered = rest.length > 0 ? [rest] : []
      bufferedBytes = rest.length
    }
  }
  if (bufferedBytes > 0) await uploads.addChunk(id, seq, Buffer.concat(buffered, bufferedBytes))
  return { size, sha256: hash.digest('hex') }
}

function toUpload(row: UploadRow): Upload {
  return {
    id: row.id,
    name: row.name,
    mediaType: row.mediaType,
    size: row.size ?? 0,
    sha256: row.sha256 ?? '',
  }
}
