import type { FastifyReply, FastifyRequest } from 'fastify'
import type { components } from '../../../generated/openapi.js'
import { defaulted, type ServiceHandlers } from '../../http/operations.js'
import { principalOf } from '../../http/security.js'
import {
  AppError,
  badRequest,
  payloadTooLarge,
  unsupportedMediaType,
} from '../../platform/errors.js'
import { holdsTag } from '../../platform/plugins/etag.js'
import { requestedRange } from './byte-ranges.js'
import type { UploadsService } from './uploads-service.js'

type Upload = components['schemas']['Upload']

/** What a multipart body may hold beside the file itself: boundaries and part headers. */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024
const ONE_FILE = 'Send exactly one part: the file, named "file"'

const tooLarge = (maxBytes: number) => payloadTooLarge(`A file may hold at most ${maxBytes} bytes`)

/** @fastify/multipart's refusals, in the service's terms; the service's own pass as they are. */
function multipartRefusal(error: unknown, maxBytes: number): unknown {
  if (error instanceof AppError) return error
  switch ((error as { code?: string }).code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return tooLarge(maxBytes)
    case 'FST_PARTS_LIMIT':
    case 'FST_FILES_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return badRequest(ONE_FILE)
    case 'FST_MP_PREMATURE_CLOSE':
    case 'FST_PROTO_VIOLATION':
      return badRequest(MALFORMED)
    default:
      // busboy's own parse errors carry no code, only their message.
      return MALFORMED_BODY.test((error as Error).message ?? '') ? badRequest(MALFORMED) : error
  }
}

const MALFORMED = 'The multipart body is cut short or malformed'
const MALFORMED_BODY = /multipart|malformed|unexpected end/i

export function createUploadHandlers(uploads: UploadsService, maxBytes: number) {
  async function receive(request: FastifyRequest): Promise<Upload> {
    if (Number(request.headers['content-length']) > maxBytes + MULTIPART_OVERHEAD_BYTES) {
      throw tooLarge(maxBytes)
    }
    if (!request.isMultipart()) throw unsupportedMediaType('Send the file as multipart/form-data')
    let stored: Upload | undefined
    try {
      for await (const part of request.parts()) {
        if (stored || part.type !== 'file' || part.fieldname !== 'file') throw badRequest(ONE_FILE)
        stored = await uploads.store(principalOf(request), {
          name: safeName(part.filename),
          mediaType: validMediaType(part.mimetype),
          bytes: part.file,
        })
      }
    } catch (error) {
      if (stored) await uploads.remove(stored.id)
      throw multipartRefusal(error, maxBytes)
    }
    if (!stored) throw badRequest(ONE_FILE)
    return stored
  }

  return {
    async uploadFile(request, reply) {
      const upload = await receive(request)
      reply.code(201).header('location', `/uploads/${upload.id}`)
      return { data: upload }
    },

    async downloadFile(request, reply) {
      const upload = await uploads.get(principalOf(request), request.params.id)
      const etag = `"${upload.sha256}"`
      reply
        .header('etag', etag)
        .header('accept-ranges', 'bytes')
        .header('cache-control', 'private, no-cache')
        .header('content-disposition', attachment(upload.name))
      if (holdsTag(request.headers['if-none-match'], etag)) return reply.code(304).send()
      return sendBytes(request, reply, uploads, { ...upload, etag })
    },

    async listUploads(request) {
      const { page, limit } = request.query
      const result = await uploads.page(principalOf(request), {
        page: defaulted(page, 'page'),
        limit: defaulted(limit, 'limit'),
      })
      return { data: result.items, pagination: result.pagination }
    },

    async getUploadUsage(request) {
      return { data: await uploads.usage(principalOf(request)) }
    },

    async deleteUpload(request, reply) {
      await uploads.delete(principalOf(request), request.params.id)
      return reply.code(204).send()
    },
  } satisfies Partial<ServiceHandlers>
}

function sendBytes(
  request: FastifyRequest,
  reply: FastifyReply,
  uploads: UploadsService,
  upload: Upload & { etag: string },
) {
  const { size } = upload
  // If-Range with a tag that is not current: the client's part is stale, send it all.
  const ifRange = request.headers['if-range']
  const rangeHeader =
    ifRange === undefined || ifRange === upload.etag ? request.headers.range : undefined
  const range = requestedRange(rangeHeader, size)
  if (range === 'unsatisfiable') {
    reply.header('content-range', `bytes */${size}`)
    throw new AppError(
      'BAD_REQUEST',
      416,
      `The file holds ${size} bytes; the range starts past them`,
    )
  }
  const { start, end } = range ?? { start: 0, end: size - 1 }
  if (range) reply.code(206).header('content-range', `bytes ${start}-${end}/${size}`)
  return reply
    .type(upload.mediaType)
    .header('content-length', end - start + 1)
    .send(uploads.stream(upload.id, { start, end }))
}

/** The name without a path or control characters; at most 255 characters. */
export function safeName(filename: string): string {
  const base = filename.split(/[/\\]/).at(-1) ?? ''
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it removes
  const clean = base.replace(/[\u0000-\u001f\u007f]/g, '').trim()
  return [...clean].slice(0, 255).join('') || 'upload'
}

const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/

/** The part's media type when it is a valid `type/subtype`, parameters dropped. */
function validMediaType(mimetype: string): string {
  const essence = mimetype.split(';', 1)[0]?.trim().toLowerCase() ?? ''
  return MEDIA_TYPE.test(essence) ? essence : 'application/octet-stream'
}

/** RFC 6266: an ASCII name for old clients, the exact one in UTF-8 for the others. */
function attachment(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_')
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeRFC5987(name)}`
}

const encodeRFC5987 = (value: string) =>
  encodeURIComponent(value).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  )
