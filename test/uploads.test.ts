import { createHash, randomBytes } from 'node:crypto'
import { count, eq, sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { products, uploadChunks, uploads } from '../src/db/schema.js'
import { requestedRange } from '../src/domains/uploads/byte-ranges.js'
import { safeName } from '../src/domains/uploads/uploads-handlers.js'
import { createUploadsRepository } from '../src/domains/uploads/uploads-repository.js'
import { createUploadsService } from '../src/domains/uploads/uploads-service.js'
import { backends } from './helpers/backends.js'
import { assertMatchesSpec } from './helpers/contract.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'

const MiB = 1024 * 1024
const BOUNDARY = 'test-boundary-7MA4YWxkTrZu0gW'

interface Part {
  name: string
  filename?: string
  type?: string
  data: Buffer | string
}

/** A multipart/form-data body, byte for byte. */
function multipart(parts: Part[]) {
  const pieces = parts.flatMap((part) => {
    const disposition = `form-data; name="${part.name}"${part.filename === undefined ? '' : `; filename="${part.filename}"`}`
    const head = `--${BOUNDARY}\r\nContent-Disposition: ${disposition}\r\n${part.type ? `Content-Type: ${part.type}\r\n` : ''}\r\n`
    return [Buffer.from(head), Buffer.from(part.data), Buffer.from('\r\n')]
  })
  return Buffer.concat([...pieces, Buffer.from(`--${BOUNDARY}--\r\n`)])
}

const MULTIPART = `multipart/form-data; boundary=${BOUNDARY}`
const fileOf = (data: Buffer | string, filename = 'notes.txt', type = 'text/plain') => [
  { name: 'file', filename, type, data },
]
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex')

/**
 * A multipart body of one `size`-byte file made as it is read (so the test holds none of
 * it), and the SHA-256 of the file once it has all been read. The body stops after
 * `holdAt` bytes of the file until `release` is called.
 */
function streamedUpload(size: number, holdAt = size) {
  const hash = createHash('sha256')
  let sent = 0
  let stage: 'head' | 'file' | 'tail' | 'done' = 'head'
  let release = () => {}
  const released = new Promise<void>((resolve) => {
    release = resolve
  })
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (stage === 'head') {
        controller.enqueue(
          Buffer.from(
            `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
          ),
        )
        stage = 'file'
      } else if (stage === 'file') {
        if (sent === holdAt) await released
        const end = sent < holdAt ? holdAt : size
        const piece = randomBytes(Math.min(64 * 1024, end - sent))
        hash.update(piece)
        sent += piece.length
        controller.enqueue(piece)
        if (sent >= size) stage = 'tail'
      } else if (stage === 'tail') {
        controller.enqueue(Buffer.from(`\r\n--${BOUNDARY}--\r\n`))
        stage = 'done'
      } else {
        controller.close()
      }
    },
  })
  return { stream, release, digest: () => hash.digest('hex') }
}

/** POSTs a body to /upload of a server; the answer is checked against openapi.yaml. */
async function postTo(
  server: TestServer,
  body: RequestInit['body'],
  { token, headers = {} }: { token: string; headers?: Record<string, string> },
  signal?: AbortSignal,
) {
  const url = `${server.baseUrl}/upload`
  const response = await fetch(url, {
    method: 'POST',
    body,
    headers: { 'content-type': MULTIPART, authorization: `Bearer ${token}`, ...headers },
    duplex: 'half',
    signal,
  } as RequestInit)
  const text = await response.text()
  const contentType = response.headers.get('content-type')
  const parsed = contentType?.startsWith('application/json') ? JSON.parse(text) : text
  assertMatchesSpec('POST', url, { status: response.status, contentType, body: parsed, text })
  return { status: response.status, headers: response.headers, body: parsed }
}

describe('byte ranges', () => {
  it.each([
    ['bytes=0-0', 10, { start: 0, end: 0 }],
    ['bytes=2-5', 10, { start: 2, end: 5 }],
    ['bytes=2-', 10, { start: 2, end: 9 }],
    ['bytes=-3', 10, { start: 7, end: 9 }],
    ['bytes=-30', 10, { start: 0, end: 9 }],
    ['bytes=5-99', 10, { start: 5, end: 9 }],
    ['bytes=10-', 10, 'unsatisfiable'],
    ['bytes=-0', 10, 'unsatisfiable'],
    ['bytes=0-1, 4-5', 10, undefined],
    ['bytes=5-2', 10, undefined],
    ['items=0-1', 10, undefined],
    ['bytes=-', 10, undefined],
    [undefined, 10, undefined],
  ])('reads %s of %i bytes as %o', (header, size, range) => {
    expect(requestedRange(header, size)).toEqual(range)
  })

  it.each([
    ['../../etc/passwd', 'passwd'],
    ['C:\\Users\\me\\report.pdf', 'report.pdf'],
    ['bad\u0000na\u001fme\u007f.txt', 'badname.txt'],
    ['   ', 'upload'],
    ['x'.repeat(300), 'x'.repeat(255)],
    ['résumé ☕.txt', 'résumé ☕.txt'],
  ])('keeps %j as %j', (given, kept) => {
    expect(safeName(given)).toBe(kept)
  })
})

describe.each(backends)('uploads on $name', (backend) => {
  let server: TestServer
  let second: TestServer
  let owner: Awaited<ReturnType<typeof newUser>>
  let stranger: Awaited<ReturnType<typeof newUser>>
  let admin: string

  const post = (
    body: RequestInit['body'],
    { token = owner.accessToken, headers = {} as Record<string, string>, through = server } = {},
  ) => postTo(through, body, { token, headers })
  const stored = async (parts: Part[]) => {
    const response = await post(multipart(parts))
    expect(response.status, JSON.stringify(response.body)).toBe(201)
    return response.body.data as { id: number; size: number; sha256: string; name: string }
  }
  /** GETs an upload; JSON answers (errors) are checked against the spec. */
  async function download(
    id: number,
    { token = owner.accessToken, headers = {} as Record<string, string>, through = server } = {},
  ) {
    const url = `${through.baseUrl}/uploads/${id}`
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}`, ...headers } })
    const bytes = Buffer.from(await response.arrayBuffer())
    const contentType = response.headers.get('content-type')
    if (contentType?.startsWith('application/json') || response.status === 304) {
      const text = bytes.toString('utf8')
      const body = text ? JSON.parse(text) : text
      assertMatchesSpec('GET', url, { status: response.status, contentType, body, text })
    }
    return { status: response.status, headers: response.headers, bytes }
  }
  const rowCounts = async () => {
    const { db } = server.testDatabase.database
    const [files] = await db.select({ n: count() }).from(uploads)
    const [chunks] = await db.select({ n: count() }).from(uploadChunks)
    return { files: files?.n, chunks: chunks?.n }
  }

  beforeAll(async () => {
    server = await startServer(backend, { UPLOAD_MAX_BYTES: String(4 * MiB) })
    second = await startServer(
      backend,
      { UPLOAD_MAX_BYTES: String(4 * MiB) },
      { testDatabase: server.testDatabase },
    )
    owner = await newUser(server.api)
    stranger = await newUser(server.api)
    admin = (await login(server.api, ADMIN)).accessToken
  })
  afterAll(async () => {
    await second?.close()
    await server?.close()
  })

  describe('storing and reading back', () => {
    it('stores a file of several chunks and gives it back byte for byte, from either instance', async () => {
      const data = randomBytes(3 * MiB + 12_345)
      const response = await post(multipart(fileOf(data, 'photo.jpg', 'image/jpeg')))
      expect(response.status).toBe(201)
      const upload = response.body.data
      expect(upload).toEqual({
        id: expect.any(Number),
        name: 'photo.jpg',
        mediaType: 'image/jpeg',
        size: data.length,
        sha256: sha256(data),
        createdAt: expect.any(String),
      })
      expect(response.headers.get('location')).toBe(`/uploads/${upload.id}`)
      for (const through of [server, second]) {
        const back = await download(upload.id, { through })
        expect(back.status).toBe(200)
        expect(back.bytes.equals(data)).toBe(true)
        expect(back.headers.get('content-type')).toBe('image/jpeg')
        expect(back.headers.get('content-length')).toBe(String(data.length))
        expect(back.headers.get('etag')).toBe(`"${sha256(data)}"`)
        expect(back.headers.get('accept-ranges')).toBe('bytes')
        expect(back.headers.get('cache-control')).toBe('private, no-cache')
        expect(back.headers.get('content-disposition')).toBe(
          `attachment; filename="photo.jpg"; filename*=UTF-8''photo.jpg`,
        )
      }
    })

    it('keeps a small text file, an empty one, and a name without its path', async () => {
      const text = await stored(fileOf('hello, uploads\n', 'C:\\Users\\me\\hello.txt'))
      expect(text).toMatchObject({ name: 'hello.txt', size: 15 })
      expect((await download(text.id)).bytes.toString()).toBe('hello, uploads\n')
      const empty = await stored(fileOf('', 'empty.bin', 'application/octet-stream'))
      expect(empty).toMatchObject({ size: 0, sha256: sha256('') })
      const back = await download(empty.id)
      expect(back.status).toBe(200)
      expect(back.bytes.length).toBe(0)
    })

    it('takes an invalid media type as application/octet-stream', async () => {
      const upload = await stored(fileOf('x', 'x.bin', 'not a media type'))
      expect(upload).toMatchObject({ mediaType: 'application/octet-stream' })
    })

    it('names a file with any characters safely in Content-Disposition', async () => {
      const upload = await stored(fileOf('x', 'résumé \\"final\\".txt'))
      expect((await download(upload.id)).headers.get('content-disposition')).toBe(
        `attachment; filename="r_sum_ _final_.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22final%22.txt`,
      )
    })
  })

  describe('conditional and partial reads', () => {
    const data = randomBytes(600 * 1024)
    let id: number
    let etag: string
    beforeAll(async () => {
      id = (await stored(fileOf(data, 'parts.bin', 'application/octet-stream'))).id
      etag = `"${sha256(data)}"`
    })

    it('answers 304 to the current ETag', async () => {
      const response = await download(id, { headers: { 'if-none-match': etag } })
      expect(response.status).toBe(304)
      expect(response.bytes.length).toBe(0)
    })

    it.each([
      ['bytes=0-0', 0, 0],
      ['bytes=262140-262150', 262_140, 262_150],
      ['bytes=524280-', 524_280, 600 * 1024 - 1],
      ['bytes=-10', 600 * 1024 - 10, 600 * 1024 - 1],
    ])('answers %s with 206 and exactly those bytes', async (range, start, end) => {
      const response = await download(id, { headers: { range } })
      expect(response.status).toBe(206)
      expect(response.bytes.equals(data.subarray(start, end + 1))).toBe(true)
      expect(response.headers.get('content-range')).toBe(`bytes ${start}-${end}/${data.length}`)
      expect(response.headers.get('content-length')).toBe(String(end - start + 1))
    })

    it('answers 416 to a range past the end, naming the size', async () => {
      const response = await download(id, { headers: { range: `bytes=${data.length}-` } })
      expect(response.status).toBe(416)
      expect(response.headers.get('content-range')).toBe(`bytes */${data.length}`)
    })

    it('sends the whole file for several ranges, or an If-Range that is not current', async () => {
      const several = await download(id, { headers: { range: 'bytes=0-1, 5-6' } })
      expect(several.status).toBe(200)
      expect(several.bytes.equals(data)).toBe(true)
      const stale = await download(id, { headers: { range: 'bytes=0-9', 'if-range': '"old"' } })
      expect(stale.status).toBe(200)
      expect(stale.bytes.length).toBe(data.length)
      const current = await download(id, { headers: { range: 'bytes=0-9', 'if-range': etag } })
      expect(current.status).toBe(206)
      expect(current.bytes.equals(data.subarray(0, 10))).toBe(true)
    })

    it('answers HEAD with the headers alone', async () => {
      const response = await fetch(`${server.baseUrl}/uploads/${id}`, {
        method: 'HEAD',
        headers: { authorization: `Bearer ${owner.accessToken}` },
      })
      expect(response.status).toBe(200)
      expect(response.headers.get('etag')).toBe(etag)
      expect(response.headers.get('content-length')).toBe(String(data.length))
      expect((await response.arrayBuffer()).byteLength).toBe(0)
    })

    it('is its owner’s and the admins’: 403 for another user, 401 anonymously, 404 unknown', async () => {
      expect((await download(id, { token: stranger.accessToken })).status).toBe(403)
      expect((await download(id, { token: admin })).status).toBe(200)
      const anonymous = await fetch(`${server.baseUrl}/uploads/${id}`)
      expect(anonymous.status).toBe(401)
      expect((await download(2_147_483_647)).status).toBe(404)
    })
  })

  describe('refusals, storing nothing', () => {
    it('refuses a file over UPLOAD_MAX_BYTES with 413, by its Content-Length', async () => {
      const before = await rowCounts()
      const response = await post(multipart(fileOf(randomBytes(4 * MiB + 100 * 1024))))
      expect(response.status).toBe(413)
      expect(response.body.error.code).toBe('PAYLOAD_TOO_LARGE')
      expect(await rowCounts()).toEqual(before)
    })

    it('refuses a streamed file (no Content-Length) with 413 once it passes the limit', async () => {
      const before = await rowCounts()
      const { stream } = streamedUpload(4 * MiB + 1)
      const response = await post(stream as unknown as RequestInit['body'])
      expect(response.status).toBe(413)
      expect(response.body.error.code).toBe('PAYLOAD_TOO_LARGE')
      expect(await rowCounts()).toEqual(before)
    })

    it.each([
      ['no part at all', []],
      ['a field and no file', [{ name: 'note', data: 'hello' }]],
      ['a file under another name', [{ name: 'upload', filename: 'a.txt', data: 'a' }]],
      [
        'two files',
        [
          { name: 'file', filename: 'a.txt', data: 'a' },
          { name: 'file', filename: 'b.txt', data: 'b' },
        ],
      ],
      [
        'a file and a field',
        [
          { name: 'file', filename: 'a.txt', data: 'a' },
          { name: 'note', data: 'n' },
        ],
      ],
    ])('refuses %s with 400', async (_, parts) => {
      const before = await rowCounts()
      const response = await post(multipart(parts as Part[]))
      expect(response.status).toBe(400)
      expect(response.body.error.message).toMatch(/exactly one part/)
      expect(await rowCounts()).toEqual(before)
    })

    it('refuses a body cut short with 400', async () => {
      const before = await rowCounts()
      const whole = multipart(fileOf('some content'))
      const response = await post(whole.subarray(0, whole.length - 20))
      expect(response.status).toBe(400)
      expect(await rowCounts()).toEqual(before)
    })

    it('refuses a multipart body sent to any other operation with 415, storing nothing', async () => {
      const { db } = server.testDatabase.database
      const productCount = async () => (await db.select({ n: count() }).from(products))[0]?.n
      const before = [await rowCounts(), await productCount()]
      const response = await fetch(`${server.baseUrl}/products`, {
        method: 'POST',
        body: multipart(fileOf('{"name":"Lamp","price":1,"category":"c"}')),
        headers: { 'content-type': MULTIPART, authorization: `Bearer ${admin}` },
      })
      expect(response.status).toBe(415)
      const body = (await response.json()) as { error: { code: string } }
      expect(body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE')
      expect([await rowCounts(), await productCount()]).toEqual(before)
    })

    it("runs the multipart plugin's hooks on the upload alone", () => {
      // Fastify's route tree: each route's line, then a line per kind of hook it runs.
      const tree = server.app.printRoutes({ includeHooks: true, commonPrefix: false }).split('\n')
      const onResponseHooks = (route: string) => {
        const hooks = []
        for (const line of tree.slice(tree.findIndex((each) => each.includes(route)) + 1)) {
          if (!line.includes('•')) break
          hooks.push(line)
        }
        const line = hooks.find((each) => each.includes('(onResponse)')) ?? '[]'
        return (JSON.parse(line.slice(line.indexOf('['))) as string[]).length
      }
      expect(onResponseHooks('/products (POST)')).toBeGreaterThan(0)
      expect(onResponseHooks('/upload (POST)')).toBe(onResponseHooks('/products (POST)') + 1)
    })

    it('refuses a JSON body with 415, and an anonymous upload with 401', async () => {
      const before = await rowCounts()
      const json = await post(JSON.stringify({ file: 'x' }), {
        headers: { 'content-type': 'application/json' },
      })
      expect(json.status).toBe(415)
      const anonymous = await fetch(`${server.baseUrl}/upload`, {
        method: 'POST',
        body: multipart(fileOf('x')),
        headers: { 'content-type': MULTIPART },
      })
      expect(anonymous.status).toBe(401)
      expect(await rowCounts()).toEqual(before)
    })
  })
})

describe.each(backends)('a 40 MiB upload on $name', (backend) => {
  let server: TestServer
  let token: string
  beforeAll(async () => {
    server = await startServer(backend, { UPLOAD_MAX_BYTES: String(50 * MiB) })
    token = (await newUser(server.api)).accessToken
  })
  afterAll(() => server?.close())

  it('stores a file as it streams in, not once it has all of it', async () => {
    const upload = streamedUpload(40 * MiB, 20 * MiB)
    const storedChunks = async () => {
      const [row] = await server.testDatabase.database.db.select({ n: count() }).from(uploadChunks)
      return row?.n ?? 0
    }
    const answer = fetch(`${server.baseUrl}/upload`, {
      method: 'POST',
      body: upload.stream,
      headers: { 'content-type': MULTIPART, authorization: `Bearer ${token}` },
      duplex: 'half',
    } as RequestInit)
    // Half the file sent and the rest held back: the half is stored already, in 256 KiB
    // chunks, but for what the multipart parser keeps back while it looks for the boundary.
    try {
      await vi.waitFor(async () => expect(await storedChunks()).toBeGreaterThanOrEqual(79), {
        timeout: 60_000,
        interval: 100,
      })
    } finally {
      upload.release()
    }
    const response = await answer
    expect(response.status).toBe(201)
    const { data } = (await response.json()) as {
      data: { id: number; size: number; sha256: string }
    }
    expect(data).toMatchObject({ size: 40 * MiB, sha256: upload.digest() })
    expect(await storedChunks()).toBe(160)

    const back = await fetch(`${server.baseUrl}/uploads/${data.id}`, {
      headers: { authorization: `Bearer ${token}` },
    })
    const hash = createHash('sha256')
    let size = 0
    for await (const piece of back.body as unknown as AsyncIterable<Uint8Array>) {
      hash.update(piece)
      size += piece.length
    }
    expect(size).toBe(40 * MiB)
    expect(hash.digest('hex')).toBe(data.sha256)
  }, 120_000)
})

describe.each(backends)('the storage quota on $name', (backend) => {
  const QUOTA = MiB
  let server: TestServer
  let admin: string
  beforeAll(async () => {
    server = await startServer(backend, {
      UPLOAD_MAX_BYTES: String(4 * MiB),
      UPLOAD_QUOTA_BYTES: String(QUOTA),
    })
    admin = (await login(server.api, ADMIN)).accessToken
  })
  afterAll(() => server?.close())

  const db = () => server.testDatabase.database.db
  const storedFile = async (token: string, data: Buffer | string) => {
    const response = await postTo(server, multipart(fileOf(data)), { token })
    expect(response.status, JSON.stringify(response.body)).toBe(201)
    return response.body.data as { id: number; size: number; createdAt: string }
  }
  const usage = async (token: string) => {
    const response = await server.api.get('/uploads/usage', { token })
    expect(response.status, response.text).toBe(200)
    return response.body.data as { usedBytes: number; quotaBytes: number | null }
  }
  /** A user's uploads as stored, pending and deleted ones too, and the bytes of their chunks. */
  async function storedOf(userId: number) {
    const rows = await db()
      .select({ id: uploads.id, status: uploads.status, size: uploads.size })
      .from(uploads)
      .where(eq(uploads.ownerId, userId))
      .orderBy(uploads.id)
    const [chunks] = await db()
      .select({ bytes: sql<string>`coalesce(sum(octet_length(${uploadChunks.bytes})), 0)` })
      .from(uploadChunks)
      .innerJoin(uploads, eq(uploads.id, uploadChunks.uploadId))
      .where(eq(uploads.ownerId, userId))
    return { rows, chunkBytes: Number(chunks?.bytes) }
  }
  const sizeOf = (rows: { size: number }[]) => rows.reduce((sum, row) => sum + row.size, 0)

  describe('reserving', () => {
    it('refuses a file that would pass the quota with 413 naming it, keeping nothing of it', async () => {
      const { user, accessToken } = await newUser(server.api)
      const kept = await storedFile(accessToken, randomBytes(600 * 1024))
      const response = await postTo(server, multipart(fileOf(randomBytes(500 * 1024))), {
        token: accessToken,
      })
      expect(response.status).toBe(413)
      expect(response.body.error.code).toBe('PAYLOAD_TOO_LARGE')
      expect(response.body.error.message).toContain(String(QUOTA))
      expect(await usage(accessToken)).toEqual({ usedBytes: 600 * 1024, quotaBytes: QUOTA })
      expect(await storedOf(user.id)).toEqual({
        rows: [{ id: kept.id, status: 'complete', size: 600 * 1024 }],
        chunkBytes: 600 * 1024,
      })
    })

    it('lets an account fill its quota exactly, and not one byte past it', async () => {
      const { user, accessToken } = await newUser(server.api)
      await storedFile(accessToken, randomBytes(QUOTA - 1000))
      await storedFile(accessToken, randomBytes(1000))
      expect(await usage(accessToken)).toEqual({ usedBytes: QUOTA, quotaBytes: QUOTA })
      const past = await postTo(server, multipart(fileOf('x')), { token: accessToken })
      expect(past.status).toBe(413)
      await storedFile(accessToken, '')
      const { rows, chunkBytes } = await storedOf(user.id)
      expect([rows.length, sizeOf(rows), chunkBytes]).toEqual([3, QUOTA, QUOTA])
    })

    it('never lets fifty parallel uploads pass it: exactly as many files as fit are kept', async () => {
      const { user, accessToken } = await newUser(server.api)
      const size = 100 * 1024
      const answers = await Promise.all(
        Array.from({ length: 50 }, () =>
          postTo(server, multipart(fileOf(randomBytes(size))), { token: accessToken }),
        ),
      )
      const fit = Math.floor(QUOTA / size)
      const statuses = answers.map((answer) => answer.status)
      expect(statuses.filter((status) => status === 201)).toHaveLength(fit)
      expect(statuses.filter((status) => status === 413)).toHaveLength(50 - fit)
      expect(await usage(accessToken)).toEqual({ usedBytes: fit * size, quotaBytes: QUOTA })
      const { rows, chunkBytes } = await storedOf(user.id)
      expect(rows.every((row) => row.status === 'complete')).toBe(true)
      expect([rows.length, sizeOf(rows), chunkBytes]).toEqual([fit, fit * size, fit * size])
    })

    it('never lets parallel files of several chunks pass it, nor keeps what it refused', async () => {
      const { user, accessToken } = await newUser(server.api)
      const size = 300 * 1024
      const answers = await Promise.all(
        Array.from({ length: 20 }, () =>
          postTo(server, multipart(fileOf(randomBytes(size))), { token: accessToken }),
        ),
      )
      const kept = answers.filter((answer) => answer.status === 201).length
      expect(answers.every((answer) => [201, 413].includes(answer.status))).toBe(true)
      const { rows, chunkBytes } = await storedOf(user.id)
      expect(rows.every((row) => row.status === 'complete')).toBe(true)
      expect([rows.length, sizeOf(rows), chunkBytes]).toEqual([kept, kept * size, kept * size])
      expect(kept * size).toBeLessThanOrEqual(QUOTA)
      expect((await usage(accessToken)).usedBytes).toBe(kept * size)
    })
  })

  describe('giving back', () => {
    it('counts the bytes of a file still arriving, and gives them back when it is cut off', async () => {
      const { user, accessToken } = await newUser(server.api)
      const upload = streamedUpload(600 * 1024, 300 * 1024)
      const sending = new AbortController()
      const answer = postTo(
        server,
        upload.stream as unknown as RequestInit['body'],
        {
          token: accessToken,
        },
        sending.signal,
      ).catch(() => 'cut off')
      // Its first chunk is stored, and reserved.
      await vi.waitFor(async () => expect((await usage(accessToken)).usedBytes).toBe(256 * 1024))
      const meanwhile = randomBytes(QUOTA - 256 * 1024 + 1)
      const refused = await postTo(server, multipart(fileOf(meanwhile)), { token: accessToken })
      expect(refused.status).toBe(413)
      sending.abort()
      expect(await answer).toBe('cut off')
      await vi.waitFor(async () => expect((await usage(accessToken)).usedBytes).toBe(0))
      expect(await storedOf(user.id)).toEqual({ rows: [], chunkBytes: 0 })
    })

    it('gives back what a body cut short had reserved', async () => {
      const { user, accessToken } = await newUser(server.api)
      const whole = multipart(fileOf(randomBytes(600 * 1024)))
      const response = await postTo(server, whole.subarray(0, whole.length - 20), {
        token: accessToken,
      })
      expect(response.status).toBe(400)
      expect(await usage(accessToken)).toEqual({ usedBytes: 0, quotaBytes: QUOTA })
      expect(await storedOf(user.id)).toEqual({ rows: [], chunkBytes: 0 })
    })

    it('gives back what an abandoned upload reserved when the sweep removes it', async () => {
      const { user, accessToken } = await newUser(server.api)
      const repository = createUploadsRepository(db())
      const service = createUploadsService({ db: db(), uploads: repository, quotaBytes: QUOTA })
      // What a writer that died left: a pending upload, one chunk stored and reserved.
      const pending = await repository.createPending({
        ownerId: user.id,
        name: 'lost.bin',
        mediaType: 'application/octet-stream',
      })
      await db().transaction(async (tx) => {
        await repository.grow(tx, pending.id, 1000)
        await repository.reserve(tx, user.id, 1000, QUOTA)
        await repository.addChunk(tx, pending.id, 0, randomBytes(1000))
      })
      await db()
        .update(uploads)
        .set({ createdAt: sql`now() - interval '2 hours'` })
        .where(eq(uploads.id, pending.id))
      expect((await usage(accessToken)).usedBytes).toBe(1000)
      expect(await service.removeAbandoned(60 * 60 * 1000)).toBe(1)
      expect((await usage(accessToken)).usedBytes).toBe(0)
      expect(await storedOf(user.id)).toEqual({ rows: [], chunkBytes: 0 })
    })
  })

  describe('listing, usage and deleting', () => {
    it("lists the caller's files alone, newest first, in the list envelope", async () => {
      const owner = await newUser(server.api)
      const other = await newUser(server.api)
      const first = await storedFile(owner.accessToken, 'first')
      const second = await storedFile(owner.accessToken, 'second')
      const theirs = await storedFile(other.accessToken, 'theirs')
      const listed = await server.api.get('/uploads', { token: owner.accessToken })
      expect(listed.status).toBe(200)
      expect(listed.body).toEqual({
        data: [second, first],
        pagination: { page: 1, limit: 10, total: 2, pages: 1, hasNext: false, hasPrev: false },
      })
      const paged = await server.api.get('/uploads?page=2&limit=1', { token: owner.accessToken })
      expect(paged.body).toEqual({
        data: [first],
        pagination: { page: 2, limit: 1, total: 2, pages: 2, hasNext: false, hasPrev: true },
      })
      const theirList = await server.api.get('/uploads', { token: other.accessToken })
      expect(theirList.body.data).toEqual([theirs])
    })

    it('deletes a file for its owner: 410 afterwards, and its bytes free again', async () => {
      const { user, accessToken } = await newUser(server.api)
      const file = await storedFile(accessToken, randomBytes(QUOTA))
      expect((await usage(accessToken)).usedBytes).toBe(QUOTA)
      const deleted = await server.api.delete(`/uploads/${file.id}`, { token: accessToken })
      expect(deleted.status).toBe(204)
      const read = await server.api.get(`/uploads/${file.id}`, { token: accessToken })
      expect([read.status, read.body.error.code]).toEqual([410, 'GONE'])
      const again = await server.api.delete(`/uploads/${file.id}`, { token: accessToken })
      expect(again.status).toBe(410)
      expect(await usage(accessToken)).toEqual({ usedBytes: 0, quotaBytes: QUOTA })
      expect((await server.api.get('/uploads', { token: accessToken })).body.data).toEqual([])
      expect(await storedOf(user.id)).toEqual({
        rows: [{ id: file.id, status: 'deleted', size: QUOTA }],
        chunkBytes: 0,
      })
      await storedFile(accessToken, randomBytes(QUOTA))
    })

    it("refuses another user's delete with 403 and an unknown id with 404, changing nothing", async () => {
      const owner = await newUser(server.api)
      const stranger = await newUser(server.api)
      const file = await storedFile(owner.accessToken, 'mine')
      const before = await storedOf(owner.user.id)
      const refused = await server.api.delete(`/uploads/${file.id}`, {
        token: stranger.accessToken,
      })
      expect([refused.status, refused.body.error.code]).toEqual([403, 'FORBIDDEN'])
      const unknown = await server.api.delete('/uploads/2147483647', { token: owner.accessToken })
      expect([unknown.status, unknown.body.error.code]).toEqual([404, 'NOT_FOUND'])
      expect(await storedOf(owner.user.id)).toEqual(before)
      expect((await usage(owner.accessToken)).usedBytes).toBe(4)
      expect((await server.api.get(`/uploads/${file.id}`, { token: owner.accessToken })).text).toBe(
        'mine',
      )
    })

    it('exempts admins from the quota, counts their bytes, and lets them delete any file', async () => {
      const before = await usage(admin)
      expect(before.quotaBytes).toBeNull()
      await storedFile(admin, randomBytes(QUOTA + 1))
      expect((await usage(admin)).usedBytes).toBe(before.usedBytes + QUOTA + 1)
      const { accessToken } = await newUser(server.api)
      const file = await storedFile(accessToken, 'theirs')
      expect((await server.api.delete(`/uploads/${file.id}`, { token: admin })).status).toBe(204)
      expect((await usage(accessToken)).usedBytes).toBe(0)
      expect((await usage(admin)).usedBytes).toBe(before.usedBytes + QUOTA + 1)
    })

    it.each([
      ['DELETE', '/uploads/abc'],
      ['DELETE', '/uploads/0'],
      ['DELETE', '/uploads/1.5'],
      ['GET', '/uploads?page=0'],
      ['GET', '/uploads?limit=101'],
      ['GET', '/uploads?page=first'],
    ])('refuses %s %s with 400 in the envelope, changing nothing', async (method, path) => {
      const { user, accessToken } = await newUser(server.api)
      await storedFile(accessToken, 'kept')
      const before = await storedOf(user.id)
      const response = await server.api.request(method, path, { token: accessToken })
      expect(response.status).toBe(400)
      expect(response.body.error).toMatchObject({
        code: expect.any(String),
        message: expect.any(String),
      })
      expect(await storedOf(user.id)).toEqual(before)
      expect((await usage(accessToken)).usedBytes).toBe(4)
    })
  })
})
