import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import { type ExecutionResult, execute, GraphQLError, type GraphQLSchema } from 'graphql'
import { CloseCode, makeServer } from 'graphql-ws'
import type { WebSocket } from 'ws'
import type { Admit } from './admission.js'
import { createCompiledSubscriptions } from './compiled-subscriptions.js'
import { beforeExecution, type ContextFactory, type GraphQLContext } from './context.js'
import { toClientError } from './errors.js'
import { LIMITS } from './limits.js'
import { cappedFrame } from './response-cap.js'
import { type SocketSeat, TOO_MANY_SOCKETS } from './socket-seats.js'
import type { LiveSubscriptions } from './subscriptions.js'

interface Extra {
  socket: WebSocket
  request: FastifyRequest
  seat: SocketSeat
  subscriptions: LiveSubscriptions
}

export interface TransportWsOptions {
  schema: () => GraphQLSchema
  contexts: ContextFactory
  admit: Admit
  log: FastifyBaseLogger
  /** Closes a socket whose subscriber fell too far behind. */
  closeSlowConsumer: (socket: WebSocket) => void
}

const KEEP_ALIVE_MS = 12_000

/**
 * The `graphql-transport-ws` subprotocol, served by the graphql-ws library itself, so
 * every rule of the protocol (and its close codes) holds. Subscriptions run on the
 * same schema, resolvers and emitter as Mercurius.
 */
const credentialsOf = (ctx: {
  connectionParams?: Readonly<Record<string, unknown>> | undefined
  extra: Extra
}) => ({
  authToken: ctx.connectionParams?.authToken,
  authorization: ctx.extra.request.headers.authorization,
})

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

export function createTransportWsHandler(options: TransportWsOptions) {
  const { log } = options
  const compiled = createCompiledSubscriptions()
  const server = makeServer<Record<string, unknown> | undefined, Extra>({
    connectionInitWaitTimeout: LIMITS.connectionInitMs,
    // Admitting here (budget, token limit, validation, the cost with the variables) turns
    // a refusal into the protocol's `error` message for that operation; graphql-ws's own
    // parse would close the socket (4500).
    async onSubscribe(ctx, _id, payload) {
      const { request, seat } = ctx.extra
      const admission = await options.admit(request, seat.caller, payload)
      if ('errors' in admission) return [...admission.errors]
      const schema = options.schema()
      compiled.admitted(schema, payload, admission.document)
      return {
        schema,
        document: admission.document,
        operationName: payload.operationName,
        variableValues: admission.variables,
      }
    },
    execute: (args) => checked(args.contextValue as GraphQLContext, () => execute(args)),
    subscribe: (args) =>
      checked(args.contextValue as GraphQLContext, () => compiled.subscribe(args)),
    onConnect(ctx) {
      let principal: ReturnType<ContextFactory['principalOf']>
      try {
        principal = options.contexts.principalOf(credentialsOf(ctx))
      } catch {
        return false
      }
      const { seat, socket, request } = ctx.extra
      if (seat.moveTo(principal, request.ip)) return true
      // Closed with our code first; graphql-ws's own close (4403) then finds it closing.
      socket.close(TOO_MANY_SOCKETS.code, TOO_MANY_SOCKETS.reason)
      return false
    },
    context: (ctx): GraphQLContext =>
      options.contexts.create(credentialsOf(ctx), {
        requestId: ctx.extra.request.id,
        closeSlowConsumer: () => options.closeSlowConsumer(ctx.extra.socket),
        subscriptions: ctx.extra.subscriptions,
      }),
    onNext: (_ctx, _id, _payload, _args, result) =>
      result.errors
        ? { ...result, errors: result.errors.map((error) => toClientError(error, log)) }
        : undefined,
    onError: (_ctx, _id, _payload, errors) => errors.map((error) => toClientError(error, log)),
  })

  return (
    socket: WebSocket,
    request: FastifyRequest,
    seat: SocketSeat,
    subscriptions: LiveSubscriptions,
  ) => {
    const closed = server.opened(
      {
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
      },
      { socket, request, seat, subscriptions },
    )
    const keepAlive = setInterval(() => socket.ping(), KEEP_ALIVE_MS)
    socket.once('close', (code, reason) => {
      clearInterval(keepAlive)
      closed(code, String(reason))
    })
  }
}
