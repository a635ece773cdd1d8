import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'

/**
 * Fastify's `clientErrorHandler`: a request Node's parser refuses before Fastify sees it
 * (a malformed request line, headers over the size limit, headers that never finish)
 * is answered in the error envelope like any other, not in Fastify's shape of its own.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket) {
  // A reset connection is gone: there is no one to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const [status, message] = describe(error.code)
  if (socket.writable) {
    const body = JSON.stringify({ error: { code: 'BAD_REQUEST', message } })
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\n` +
        `Content-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    )
  }
  socket.destroy()
}

function describe(code: string | undefined): [status: number, message: string] {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return [408, 'The request did not arrive in time']
  if (code === 'HPE_HEADER_OVERFLOW') return [431, 'The request headers are too large']
  return [400, 'The request is not valid HTTP']
}
