import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import {
  type DocumentNode,
  type ExecutionResult,
  execute,
  GraphQLError,
  type GraphQLSchema,
  getOperationAST,
} from 'graphql'
import {
  CloseCode,
  GRAPHQL_TRANSPORT_WS_PROTOCOL,
  makeServer,
  type WebSocket as ProtocolSocket,
  type ServerOptions,
} from 'graphql-ws'
import type { WebSocket } from 'ws'
import { AppError } from '../../platform/errors.js'
import type { TokenPrincipal } from '../../platform/infrastructure/access-tokens.js'
import type { RecentWrites } from '../../platform/infrastructure/recent-writes.js'
import { isRecord } from '../../platform/input-rules.js'
import type { Tracing } from '../../platform/telemetry/tracing.js'
import { beforeExecution, type ContextFactory, type GraphQLContext } from '../context.js'
import { toClientError } from '../errors.js'
import { LIMITS } from '../limits.js'
import { tracedExecution } from '../operation-spans.js'
import { cappedFrame } from '../response-cap.js'
import type { Admit } from './admission.js'
import { createCompiledSubscriptions } from './compiled-subscriptions.js'
import { LEGACY_SUBPROTOCOL, legacyTranslation } from './legacy-protocol.js'
import type { LiveSubscriptions } from './live-subscriptions.js'
import { type SocketSeat, TOO_MANY_SOCKETS } from './socket-seats.js'
import type { SocketSessions } from './socket-sessions.js'

/** What the server knows of each socket beyond the protocol. */
export interface SocketExtra {
  socket: WebSocket
  request: FastifyRequest
  seat: SocketSeat
  subscriptions: LiveSubscriptions
}

type ConnectionParams = Record<string, unknown> | undefined

export interface WebSocketServerOptions {
  schema: () => GraphQLSchema
  contexts: ContextFactory
  admit: Admit
  log: FastifyBaseLogger
  /** Told of each operation admitted, with its document. */
  admitted: (schema: GraphQLSchema, document: DocumentNode) => void
  /** Closes a socket whose subscriber fell too far behind. */
  closeSlowConsumer: (socket: WebSocket) => void
  /** Each signed-in socket, closed when its session ends or its token expires. */
  sessions: SocketSessions
  /** A span per operation, when tracing is on. */
  tracing?: Pick<Tracing, 'startOperation'> | undefined
  /** Told of each mutation's caller once it has run, with a read replica. */
  recentWrites?: Pick<RecentWrites, 'record'> | undefined
}

const KEEP_ALIVE_MS = 12_000

const credentialsOf = (ctx: { connectionParams?: ConnectionParams; extra: SocketExtra }) => ({
  authToken: ctx.connectionParams?.authToken,
  authorization: ctx.extra.request.headers.authorization,
})

/**
 * The socket moved to its caller's seats, and held to its caller's session; refused
 * when that caller has no seat left.
 */
function seated(
  { seat, socket, request }: SocketExtra,
  principal: TokenPrincipal | null,
  sessions: SocketSessions,
): boolean {
  if (seat.moveTo(principal, request.ip)) {
    if (principal) sessions.track(socket, principal)
    return true
  }
  // Closed with our code first; graphql-ws's own close (4403) then finds it closing.
  socket.close(TOO_MANY_SOCKETS.code, TOO_MANY_SOCKETS.reason)
  return false
}

/** The checks every path runs before executing; a refusal is the operation's error. */
function checked<Result>(context: GraphQLContext, run: () => Result): Result | ExecutionResult {
  try {
    beforeExecution(context)
  } catch (error) {
    return {
      errors: [new GraphQLError((error as Error).message, { originalError: error as Error })],
    }
  }
  return run()
}

/**
 * graphql-ws's server, for both subprotocols of /graphql: `graphql-transport-ws` as the
 * library speaks it, so every rule of the protocol (and its close codes) holds, and the
 * legacy `graphql-ws` through legacy-protocol.ts. One context, one admission and one
 * execution for every operation of every socket.
 */
function serverOptions(
  options: WebSocketServerOptions,
): ServerOptions<ConnectionParams, SocketExtra> {
  const { log } = options
  const compiled = createCompiledSubscriptions()
  const traced = tracedExecution(options.tracing)
  return {
    connectionInitWaitTimeout: LIMITS.connectionInitMs,
    // Admitting here (budget, token limit, validation, the cost with the variables) turns
    // a refusal into the protocol's `error` message for that operation; graphql-ws's own
    // parse would close the socket (4500).
    async onSubscribe(ctx, _id, payload) {
      const { request, seat } = ctx.extra
      const admission = await options.admit(request, seat.caller, payload)
      if ('errors' in admission) return [...admission.errors]
      const schema = options.schema()
      options.admitted(schema, admission.document)
      const { query, document } = admission
      compiled.admitted(schema, { query, operationName: payload.operationName }, document)
      return {
        schema,
        document: admission.document,
        operationName: payload.operationName,
        variableValues: admission.variables,
      }
    },
    execute: (args) =>
      checked(args.contextValue as GraphQLContext, () => traced(args, () => execute(args))),
    subscribe: (args) =>
      checked(args.contextValue as GraphQLContext, () =>
        traced(args, () => compiled.subscribe(args)),
      ),
    onConnect(ctx) {
      let principal: ReturnType<ContextFactory['confirmedPrincipalOf']>
      try {
        principal = options.contexts.confirmedPrincipalOf(credentialsOf(ctx))
      } catch {
        return false
      }
      if (!(principal instanceof Promise)) return seated(ctx.extra, principal, options.sessions)
      // A gone account is refused as a bad token is (4403); a database that fails, thrown (4500).
      return principal.then(
        (confirmed) => seated(ctx.extra, confirmed, options.sessions),
        (error) => {
          if (error instanceof AppError) return false
          throw error
        },
      )
    },
    context: (ctx) =>
      options.contexts.create(credentialsOf(ctx), {
        requestId: ctx.extra.request.id,
        closeSlowConsumer: () => options.closeSlowConsumer(ctx.extra.socket),
        subscriptions: ctx.extra.subscriptions,
      }),
    // Once the operation has run, errors or not (a field may commit before another fails).
    onOperation(ctx, _id, _payload, args) {
      const { recentWrites } = options
      if (
        recentWrites &&
        getOperationAST(args.document, args.operationName)?.operation === 'mutation'
      ) {
        recentWrites.record(ctx.extra.seat.caller)
      }
    },
    onNext: (_ctx, _id, _payload, _args, result) =>
      result.errors
        ? { ...result, errors: result.errors.map((error) => toClientError(error, log)) }
        : undefined,
    onError: (_ctx, _id, _payload, errors) => errors.map((error) => toClientError(error, log)),
  }
}

/**
 * A `subscribe` that names its document by hash (APQ's `extensions.persistedQuery`, or
 * `documentId`) may come without `query`, which graphql-ws requires: it gets an empty one,
 * which persisted-documents.ts reads as none. Called as graphql-ws parses each message;
 * `key === ''` is the message itself (see legacy-protocol.ts).
 */
function withQueryFromHash(key: string, value: unknown): unknown {
  if (key !== '' || !isRecord(value) || value.type !== 'subscribe') return value
  const { payload } = value
  if (!isRecord(payload) || payload.query !== undefined) return value
  const persisted = isRecord(payload.extensions) && payload.extensions.persistedQuery != null
  if (payload.documentId == null && !persisted) return value
  return { ...value, payload: { ...payload, query: '' } }
}

export function createWebSocketServer(options: WebSocketServerOptions) {
  const { log } = options
  const shared = serverOptions(options)
  const transportWs = makeServer({ ...shared, jsonMessageReviver: withQueryFromHash })

  /** The socket as graphql-ws writes to it: each frame within the response cap. */
  const protocolSocket = (socket: WebSocket): ProtocolSocket => ({
    protocol: socket.protocol,
    send: (data) =>
      new Promise((resolve, reject) => {
        if (socket.readyState !== socket.OPEN) return resolve()
        socket.send(cappedFrame(data), (error) => (error ? reject(error) : resolve()))
      }),
    close: (code, reason) => socket.close(code, reason),
    onMessage: (receive) =>
      socket.on('message', async (data) => {
        try {
          await receive(String(data))
        } catch (error) {
          log.error({ err: error }, 'graphql-ws message failed')
          socket.close(CloseCode.InternalServerError, 'Internal server error')
        }
      }),
  })

  /** A legacy socket: its own server, whose JSON hooks translate that socket's frames. */
  function legacyServer(socket: ProtocolSocket) {
    const translation = legacyTranslation({
      // The close that follows ends the socket whether or not the frame got out.
      send: (frame) => void Promise.resolve(socket.send(frame)).catch(() => {}),
      close: socket.close,
    })
    const server = makeServer({
      ...shared,
      jsonMessageReviver: (key, value) => withQueryFromHash(key, translation.reviver(key, value)),
      jsonMessageReplacer: translation.replacer,
    })
    const translated = {
      ...socket,
      protocol: GRAPHQL_TRANSPORT_WS_PROTOCOL,
      close: translation.close,
    }
    return { server, socket: translated }
  }

  /** Serves an open socket of /graphql until it closes. */
  return (socket: WebSocket, extra: Omit<SocketExtra, 'socket'>) => {
    const wire = protocolSocket(socket)
    const served =
      socket.protocol === LEGACY_SUBPROTOCOL
        ? legacyServer(wire)
        : { server: transportWs, socket: wire }
    const closed = served.server.opened(served.socket, { ...extra, socket })
    const keepAlive = setInterval(() => socket.ping(), KEEP_ALIVE_MS)
    socket.once('close', (code, reason) => {
      clearInterval(keepAlive)
      closed(code, String(reason))
    })
  }
}

export type ServeSocket = ReturnType<typeof createWebSocketServer>
