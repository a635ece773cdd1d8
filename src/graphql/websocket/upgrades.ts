import type { FastifyRequest } from 'fastify'
import type { WebSocket } from 'ws'
import { AppError } from '../../platform/errors.js'
import type { ContextFactory } from '../context.js'
import { createLiveSubscriptions } from './live-subscriptions.js'
import type { ServeSocket } from './server.js'
import { createSocketSeats, type SocketObserver, TOO_MANY_SOCKETS } from './socket-seats.js'
import { FORBIDDEN_CLOSE } from './socket-sessions.js'

export interface UpgradeOptions {
  serve: ServeSocket
  contexts: ContextFactory
  /** Open WebSockets per caller; undefined: no cap. */
  socketsPerCaller: number | undefined
  /** Told of each socket's life and of the user it belongs to (presence, metrics). */
  socketObservers: readonly SocketObserver[]
}

const refuse = (socket: WebSocket) => socket.close(FORBIDDEN_CLOSE.code, FORBIDDEN_CLOSE.reason)

/**
 * The wsHandler of /graphql, for every subprotocol: a socket whose upgrade carries a
 * refused bearer token is closed at once, and one whose token's account is gone as soon
 * as that is known; any other takes a seat of its caller (that user, else its address)
 * and its live-subscription count, and is served until it closes, when both are given back.
 */
export function createUpgradeHandler(options: UpgradeOptions) {
  const seats = createSocketSeats(options.socketsPerCaller, options.socketObservers)
  return (socket: WebSocket, request: FastifyRequest) => {
    const principal = upgradePrincipal(options.contexts, request)
    if (principal === undefined) return refuse(socket)
    const seat = seats.seat(principal, request.ip)
    if (!seat) return socket.close(TOO_MANY_SOCKETS.code, TOO_MANY_SOCKETS.reason)
    const subscriptions = createLiveSubscriptions()
    socket.once('close', () => {
      seat.release()
      subscriptions.closeAll()
    })
    options.serve(socket, { request, seat, subscriptions })
    // Served while the account is looked up, so no frame is missed; a connection_init
    // waits on the same lookup. A failing database is left to connection_init to report.
    if (principal) {
      Promise.resolve(principal)
        .then(options.contexts.confirm)
        .catch((error) => error instanceof AppError && refuse(socket))
    }
  }
}

/** The upgrade request's bearer principal: null when none is sent, undefined when refused. */
function upgradePrincipal(contexts: ContextFactory, request: FastifyRequest) {
  try {
    return contexts.principalOf({ authorization: request.headers.authorization })
  } catch {
    return undefined
  }
}
