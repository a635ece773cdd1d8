import { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../platform/errors.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The body's exact bytes, on operations whose spec asks (`x-fastify-config: rawBody`). */
    rawBody?: Buffer
  }
  interface FastifyContextConfig {
    rawBody?: boolean
  }
}

/**
 * A preParsing hook that keeps the body's bytes as they came, for a signature computed
 * over them (a re-serialization of the parsed JSON would not match), and hands the
 * parser the same bytes. The route's body limit applies while reading. Past it, reading
 * stops, and the answer closes the connection, as Fastify's own parser does: the client
 * may still be sending the rest, which nothing will read.
 */
export async function keepRawBody(
  request: FastifyRequest,
  reply: FastifyReply,
  payload: NodeJS.ReadableStream,
) {
  const limit = request.routeOptions.bodyLimit ?? Number.POSITIVE_INFINITY
  try {
    request.rawBody = await readUpTo(payload, limit)
  } catch (error) {
    reply.header('connection', 'close')
    throw error
  }
  // Fastify compares what was read with Content-Length through this figure.
  return Object.assign(Readable.from([request.rawBody], { objectMode: false }), {
    receivedEncodedLength: request.rawBody.length,
  })
}

function readUpTo(payload: NodeJS.ReadableStream, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let length = 0
    const stop = () => {
      payload.removeListener('data', onData)
      payload.removeListener('end', onEnd)
      payload.removeListener('error', onError)
    }
    function onData(chunk: Buffer | string) {
      const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk)
      length += bytes.length
      if (length > limit) {
        stop()
        reject(new AppError('PAYLOAD_TOO_LARGE', 413, 'The body is too large'))
      } else chunks.push(bytes)
    }
    function onEnd() {
      stop()
      resolve(Buffer.concat(chunks, length))
    }
    function onError(error: Error) {
      stop()
      reject(error)
    }
    payload.on('data', onData)
    payload.on('end', onEnd)
    payload.on('error', onError)
  })
}
