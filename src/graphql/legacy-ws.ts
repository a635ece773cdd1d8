import type { FastifyBaseLogger } from 'fastify'
import type { GraphQLError } from 'graphql'
import type { WebSocket } from 'ws'
import type { Admit } from './admission.js'
import { toClientError } from './errors.js'
import { cappedFrame } from './response-cap.js'

export interface LegacyGateOptions {
  admit: Admit
  log: FastifyBaseLogger
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * Mercurius serves the legacy `graphql-ws` subprotocol; this gate stands between the
 * socket and it and holds it to what graphql-transport-ws enforces: every `start`
 * admitted (see admission.ts) before Mercurius reads it, and every frame sent within
 * the response cap. Frames are passed on in the order they came, each once the one
 * before is through.
 */
export function guardLegacySocket(socket: WebSocket, { admit, log }: LegacyGateOptions) {
  const send = socket.send.bind(socket)
  const capped = (data: unknown, ...rest: unknown[]) =>
    (send as (...args: unknown[]) => void)(
      typeof data === 'string' ? cappedFrame(data) : data,
      ...rest,
    )
  socket.send = capped as WebSocket['send']

  const sendErrors = (id: unknown, errors: readonly GraphQLError[]) =>
    send(JSON.stringify({ type: 'error', id, payload: errors.map((e) => toClientError(e, log)) }))

  /** Whether Mercurius gets the frame. */
  async function passes(frame: string): Promise<boolean> {
    let message: unknown
    try {
      message = JSON.parse(frame)
    } catch {
      return true // Mercurius answers what it cannot read.
    }
    if (!isRecord(message) || message.type !== 'start') return true
    const payload = isRecord(message.payload) ? message.payload : {}
    // Mercurius parses the admitted query once more (it takes no parsed document from a
    // frame); the token limit bounds both reads, and only starts pay for it.
    const admission = await admit(payload)
    if ('document' in admission) return true
    sendErrors(message.id, admission.errors)
    return false
  }

  const emit = socket.emit.bind(socket)
  let previous = Promise.resolve()
  socket.emit = ((event: string | symbol, ...args: unknown[]) => {
    if (event !== 'message') return emit(event, ...args)
    previous = previous
      .then(async () => {
        if (await passes(String(args[0]))) emit(event, ...args)
      })
      .catch((error) => {
        log.error({ err: error }, 'legacy graphql-ws frame failed')
        socket.close(1011, 'Internal server error')
      })
    return true
  }) as WebSocket['emit']
}
