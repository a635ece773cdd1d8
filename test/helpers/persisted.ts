import { createHash } from 'node:crypto'
import { wsUrl } from './graphql.js'
import { LEGACY_WS, openRawSocket, type RawSocket, TRANSPORT_WS } from './raw-socket.js'

export const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')

/** The extensions of an APQ request, as Apollo's persisted-queries link sends them. */
export const persistedQuery = (sha256Hash: unknown, version: unknown = 1) => ({
  persistedQuery: { version, sha256Hash },
})

export interface Answer {
  status: number
  body: { data?: any; errors?: { message: string; extensions?: Record<string, any> }[] }
}

/** A GraphQL request over HTTP POST with any body: the parts that name a document, mostly. */
export async function post(baseUrl: string, body: Record<string, unknown>): Promise<Answer> {
  const response = await fetch(`${baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
  })
  return { status: response.status, body: (await response.json()) as Answer['body'] }
}

/** The same over GET: variables and extensions as JSON in the query string. */
export async function get(baseUrl: string, parameters: Record<string, unknown>): Promise<Answer> {
  const search = new URLSearchParams(
    Object.entries(parameters).map(([name, value]): [string, string] => [
      name,
      typeof value === 'string' ? value : JSON.stringify(value),
    ]),
  )
  const response = await fetch(`${baseUrl}/graphql?${search}`, {
    headers: { accept: 'application/json' },
  })
  return { status: response.status, body: (await response.json()) as Answer['body'] }
}

export const SUBPROTOCOLS = [
  { protocol: TRANSPORT_WS, subscribe: 'subscribe', next: 'next' },
  { protocol: LEGACY_WS, subscribe: 'start', next: 'data' },
]
export type Subprotocol = (typeof SUBPROTOCOLS)[number]

/** A socket of the subprotocol, past its acknowledgement. */
export async function acknowledgedSocket(baseUrl: string, { protocol }: Subprotocol) {
  const socket = await openRawSocket(wsUrl(baseUrl), protocol)
  socket.send({ type: 'connection_init' })
  const ack = await socket.next()
  if (ack.type !== 'connection_ack') throw new Error(`no ack: ${JSON.stringify(ack)}`)
  return socket
}

let operationId = 0

/**
 * Starts one operation with the payload and answers its first frame as an Answer: a
 * result (`next`, `data`) as its payload, an `error` as its errors.
 */
export async function overSocket(
  socket: RawSocket,
  { subscribe, next }: Subprotocol,
  payload: Record<string, unknown>,
) {
  operationId += 1
  const id = String(operationId)
  socket.send({ id, type: subscribe, payload })
  const frame = await socket.next()
  if (frame.id !== id) throw new Error(`a frame of another operation: ${JSON.stringify(frame)}`)
  if (frame.type === next) {
    const after = await socket.next()
    if (after.type !== 'complete') throw new Error(`no complete: ${JSON.stringify(after)}`)
    return { type: 'result', body: frame.payload }
  }
  if (frame.type === 'error') return { type: 'error', body: { errors: [frame.payload].flat() } }
  throw new Error(`an unexpected frame: ${JSON.stringify(frame)}`)
}
