import { readFileSync } from 'node:fs'
import websocket from '@fastify/websocket'
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify'
import { type DocumentNode, GraphQLError, getOperationAST } from 'graphql'
import mercurius, { type IResolvers } from 'mercurius'
import type { WebSocket } from 'ws'
import type { Resolvers } from '../../generated/graphql.js'
import { graphqlSchemaPath } from '../paths.js'
import type { AccessTokens } from '../platform/access-tokens.js'
import type { EventBus } from '../platform/events.js'
import { beforeExecution, type ContextFactory, createContextFactory } from './context.js'
import { acceptsGraphqlResponse, formatExecution, GRAPHQL_RESPONSE_TYPE } from './errors.js'
import { graphiqlPlugin } from './graphiql.js'
import { limitRules, validateOperation } from './limits.js'
import { type GraphQLLoaders, loaderResolvers } from './loaders.js'
import { createTransportWsHandler } from './transport-ws.js'

export const schemaPath = graphqlSchemaPath
export const GRAPHQL_PATH = '/graphql'

/** subscriptions-transport-ws, still spoken by older clients; Mercurius serves it. */
const LEGACY_SUBPROTOCOL = 'graphql-ws'
const SLOW_CONSUMER_CLOSE = { code: 1008, reason: 'Subscriber too slow: events were dropped' }
const GOING_AWAY_CLOSE = { code: 1001, reason: 'The server is shutting down' }
/** How long a closing socket may take to answer the close before it is cut. */
const CLOSE_HANDSHAKE_MS = 1000

export interface GraphqlOptions {
  resolvers: Resolvers
  /** Batched fields; each gets a resolver that goes through its loader. */
  loaders: GraphQLLoaders
  events: EventBus
  accessTokens: AccessTokens
  /** Serves GraphiQL at /graphiql. */
  graphiql: boolean
}

/** Cuts a slow subscriber off, and frees its socket even if it never reads the close. */
function closeSlowConsumer(socket: WebSocket) {
  socket.close(SLOW_CONSUMER_CLOSE.code, SLOW_CONSUMER_CLOSE.reason)
  setTimeout(() => socket.terminate(), 1000).unref()
}

/**
 * /graphql: Mercurius for HTTP, its emitter and the legacy subprotocol; graphql-ws for
 * `graphql-transport-ws`, routed by the subprotocol the client asks for.
 */
export async function graphqlPlugin(app: FastifyInstance, options: GraphqlOptions) {
  const contexts = createContextFactory(options.accessTokens, options.loaders)
  const transportWs = createTransportWsHandler({
    schema: () => app.graphql.schema,
    contexts,
    log: app.log,
    closeSlowConsumer,
  })
  app.addHook('onRoute', (route) => {
    if (route.url !== GRAPHQL_PATH) return
    if (route.wsHandler) routeBySubprotocol(route, transportWs, contexts)
    if (route.method === 'POST') allowNullExtensions(route)
  })

  app.addHook('onSend', async (request, reply, payload) => {
    const json = String(reply.getHeader('content-type')).startsWith('application/json')
    if (json && acceptsGraphqlResponse(request.headers.accept)) {
      reply.header('content-type', `${GRAPHQL_RESPONSE_TYPE}; charset=utf-8`)
    }
    return payload
  })

  // On shutdown, every socket hears why (1001), so clients reconnect to another instance;
  // @fastify/websocket's own preClose, which runs next, would close them with no code.
  app.addHook('preClose', async () => {
    for (const socket of app.websocketServer.clients) {
      socket.close(GOING_AWAY_CLOSE.code, GOING_AWAY_CLOSE.reason)
      setTimeout(() => socket.terminate(), CLOSE_HANDSHAKE_MS).unref()
    }
  })
  await app.register(websocket, { options: { maxPayload: 64 * 1024 } })
  await app.register(mercurius, {
    schema: readFileSync(schemaPath, 'utf8'),
    resolvers: { ...options.resolvers, ...loaderResolvers(options.loaders) } as IResolvers,
    path: GRAPHQL_PATH,
    graphiql: false,
    jit: 1,
    validationRules: limitRules,
    errorFormatter: formatExecution as never,
    // A refused token is kept in the context, not thrown: Mercurius would answer a
    // context that throws with the REST error envelope.
    context: (request) =>
      contexts.create({ authorization: request.headers.authorization }, { requestId: request.id }),
    subscription: {
      emitter: options.events.emitter,
      // The legacy subprotocol. Its upgrade request's token was checked on arrival
      // (routeBySubprotocol); connection_init's authToken, when given, takes over.
      context: (socket, request) =>
        contexts.create(
          { authorization: request.headers.authorization },
          {
            requestId: request.id,
            closeSlowConsumer: () => closeSlowConsumer(socket as unknown as WebSocket),
          },
        ),
      onConnect: ({ payload }) => {
        if (payload?.authToken === undefined) return true
        try {
          return { principal: contexts.principalOf({ authToken: payload.authToken }) }
        } catch {
          return false
        }
      },
    },
  })
  if (options.graphiql) await app.register(graphiqlPlugin)
  app.graphql.addHook('preExecution', async (_schema, document, context) => {
    beforeExecution(context)
    refuseSubscription(document, context.reply.request)
  })
  // Mercurius runs a legacy-protocol subscription without validating it; hold it to
  // the same rules as every other operation. The error becomes the protocol's `error`.
  app.graphql.addHook('preSubscriptionExecution', async (schema, document, context) => {
    const errors = validateOperation(schema, document)
    if (errors.length > 0) {
      throw new GraphQLError(errors.map((error) => error.message).join('; '), {
        extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
      })
    }
    beforeExecution(context)
  })
}

/** Close code of a WebSocket whose credentials are refused, as graphql-transport-ws has it. */
const FORBIDDEN_CLOSE = 4403

function routeBySubprotocol(
  route: RouteOptions,
  transportWs: ReturnType<typeof createTransportWsHandler>,
  contexts: ContextFactory,
) {
  const legacy = route.wsHandler as NonNullable<RouteOptions['wsHandler']>
  route.wsHandler = function (this: FastifyInstance, socket, request) {
    if (socket.protocol !== LEGACY_SUBPROTOCOL) {
      return transportWs(socket as unknown as WebSocket, request)
    }
    try {
      contexts.principalOf({ authorization: request.headers.authorization })
    } catch {
      return socket.close(FORBIDDEN_CLOSE, 'Forbidden')
    }
    return legacy.call(this, socket, request)
  }
}

/** GraphQL over HTTP lets a client send `"extensions": null`; Mercurius's schema does not. */
function allowNullExtensions(route: RouteOptions) {
  const body = (route.schema as { body?: { properties?: Record<string, { type: unknown }> } })?.body
  const extensions = body?.properties?.extensions
  if (extensions) extensions.type = ['object', 'null']
}

/**
 * Over HTTP, a subscription would run once with no event to resolve; its place is the
 * WebSocket on the same path.
 */
function refuseSubscription(document: DocumentNode, request: FastifyRequest) {
  const { operationName } = (request.body ?? request.query ?? {}) as { operationName?: unknown }
  const name = typeof operationName === 'string' ? operationName : undefined
  if (getOperationAST(document, name)?.operation !== 'subscription') return
  throw new GraphQLError('Subscriptions are served over WebSocket at this path, not over HTTP', {
    extensions: { code: 'BAD_USER_INPUT' },
  })
}
