import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify'
import type { WebSocket } from 'ws'
import type { ContextFactory } from './context.js'
import { guardLegacySocket, type LegacyGateOptions } from './legacy-ws.js'
import { createSocketSeats, type SocketObserver, TOO_MANY_SOCKETS } from './socket-seats.js'
import { createLiveSubscriptions, type LiveSubscriptions } from './subscriptions.js'
import type { createTransportWsHandler } from './transport-ws.js'

/** subscriptions-transport-ws, still spoken by older clients; Mercurius serves it. */
const LEGACY_SUBPROTOCOL = 'graphql-ws'

/** Close code of a WebSocket whose credentials are refused, as graphql-transport-ws has it. */
const FORBIDDEN_CLOSE = 4403

export interface SocketRoutingOptions extends LegacyGateOptions {
  transportWs: ReturnType<typeof createTransportWsHandler>
  contexts: ContextFactory
  /** Open WebSockets per caller; undefined: no cap. */
  socketsPerCaller: number | undefined
  /** Told of each socket's life and of the user it belongs to (presence, metrics). */
  socketObservers: readonly SocketObserver[]
}

/**
 * Every WebSocket of /graphql: it takes a seat of its caller (the upgrade's bearer user,
 * else its address), gets its live-subscription count, then goes to the server of its
 * subprotocol, graphql-ws or (through the legacy gate) Mercurius.
 */
export function createSocketRouting(options: SocketRoutingOptions) {
  const seats = createSocketSeats(options.socketsPerCaller, options.socketObservers)
  // Each legacy socket's live subscriptions, for the context Mercurius asks us for.
  const legacySubscriptions = new WeakMap<object, LiveSubscriptions>()

  return {
    /** The live subscriptions of a legacy socket, for its context. */
    subscriptionsOf: (socket: object) => legacySubscriptions.get(socket),

    /** Takes over the route's wsHandler, which is Mercurius's for the legacy subprotocol. */
    route(route: RouteOptions) {
      const legacy = route.wsHandler as NonNullable<RouteOptions['wsHandler']>
      route.wsHandler = function (this: FastifyInstance, socket, request) {
        const isLegacy = socket.protocol === LEGACY_SUBPROTOCOL
        const principal = upgradePrincipal(options.contexts, request)
        // graphql-transport-ws refuses the credentials at connection_init, with this code too.
        if (principal === undefined && isLegacy) return socket.close(FORBIDDEN_CLOSE, 'Forbidden')
        const seat = seats.seat(principal ?? null, request.ip)
        if (!seat) return socket.close(TOO_MANY_SOCKETS.code, TOO_MANY_SOCKETS.reason)
        const subscriptions = createLiveSubscriptions()
        socket.once('close', () => {
          seat.release()
          subscriptions.closeAll()
        })
        const ws = socket as unknown as WebSocket
        if (!isLegacy) return options.transportWs(ws, request, seat, subscriptions)
        legacySubscriptions.set(socket, subscriptions)
        guardLegacySocket(ws, request, seat, options)
        return legacy.call(this, socket, request)
      }
    },
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
