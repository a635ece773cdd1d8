import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import type { GraphQLError } from 'graphql'
import type { WebSocket } from 'ws'
import type { Admit } from './admission.js'
import type { ContextFactory } from './context.js'
import { toClientError } from './errors.js'
import { LIMITS } from './limits.js'
import { cappedFrame } from './response-cap.js'
import { type SocketSeat, TOO_MANY_SOCKETS } from './socket-seats.js'

/** graphql-transport-ws's code for a socket that never sent connection_init. */
const INIT_TIMEOUT = { code: 4408, reason: 'Connection initialisation timeout' }

export interface LegacyGateOptions {
  admit: Admit
  contexts: ContextFactory
  log: FastifyBaseLogger
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * Mercurius serves the legacy `graphql-ws` subprotocol; this gate stands between the
 * socket and it and holds it to what graphql-transport-ws enforces: connection_init
 * within LIMITS.connectionInitMs, every `start` admitted (see admission.ts) before
 * Mercurius reads it, and every frame sent within the response cap. Frames are passed
 * on in the order they came, each once the one before is through.
 */
export function guardLegacySocket(
  socket: WebSocket,
  upgrade: FastifyRequest,
  seat: SocketSeat,
  { admit, contexts, log }: LegacyGateOptions,
) {
  let initialised = false
  const initTimeout = setTimeout(() => {
    if (!initialised) socket.close(INIT_TIMEOUT.code, INIT_TIMEOUT.reason)
  }, LIMITS.connectionInitMs)
  socket.once('close', () => clearTimeout(initTimeout))

  const send = socket.send.bind(socket)
  const capped = (data: unknown, ...rest: unknown[]) =>
    (send as (...args: unknown[]) => void)(
      typeof data === 'string' ? cappedFrame(data) : data,
      ...rest,
    )
  socket.send = capped as WebSocket['send']

  const sendErrors = (id: unknown, errors: readonly GraphQLError[]) =>
    send(JSON.stringify({ type: 'error', id, payload: errors.map((e) => toClientError(e, log)) }))

  /** Counts the socket against the user that connection_init proves, if any. */
  function seated(payload: unknown): boolean {
    let principal: ReturnType<ContextFactory['principalOf']>
    try {
      principal = contexts.principalOf({
        authToken: isRecord(payload) ? payload.authToken : undefined,
        authorization: upgrade.headers.authorization,
      })
    } catch {
      return true // Mercurius refuses the credentials, with its connection_error.
    }
    if (seat.moveTo(principal, upgrade.ip)) return true
    socket.close(TOO_MANY_SOCKETS.code, TOO_MANY_SOCKETS.reason)
    return false
  }

  /** Whether Mercurius gets the frame. */
  async function passes(frame: string): Promise<boolean> {
    let message: unknown
    try {
      message = JSON.parse(frame)
    } catch {
      return true // Mercurius answers what it cannot read.
    }
    if (!isRecord(message)) return true
    if (message.type === 'connection_init') {
      initialised = true
      clearTimeout(initTimeout)
      return seated(message.payload)
    }
    // Mercurius refuses a start before connection_init, and closes the socket.
    if (message.type !== 'start' || !initialised) return true
    const payload = isRecord(message.payload) ? message.payload : {}
    // Mercurius parses the admitted query once more (it takes no parsed document from a
    // frame); the token limit bounds both reads, and only starts pay for it.
    const admission = await admit(upgrade, seat.caller, payload)
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
