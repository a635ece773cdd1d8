import { readFileSync } from 'node:fs'
import websocket from '@fastify/websocket'
import type { FastifyInstance, RouteOptions } from 'fastify'
import { GraphQLError } from 'graphql'
import mercurius, { type IResolvers } from 'mercurius'
import type { WebSocket } from 'ws'
import type { Resolvers } from '../../generated/graphql.js'
import { graphqlSchemaPath } from '../paths.js'
import type { AccessTokens } from '../platform/access-tokens.js'
import type { EventBus } from '../platform/events.js'
import { httpContext, principalOf } from './context.js'
import { acceptsGraphqlResponse, formatExecution, GRAPHQL_RESPONSE_TYPE } from './errors.js'
import { graphiqlPlugin } from './graphiql.js'
import { limitRules, validateOperation } from './limits.js'
import { createTransportWsHandler } from './transport-ws.js'

export const schemaPath = graphqlSchemaPath
export const GRAPHQL_PATH = '/graphql'

/** subscriptions-transport-ws, still spoken by older clients; Mercurius serves it. */
const LEGACY_SUBPROTOCOL = 'graphql-ws'
const SLOW_CONSUMER_CLOSE = { code: 1008, reason: 'Subscriber too slow: events were dropped' }

export interface GraphqlOptions {
  resolvers: Resolvers
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
  const transportWs = createTransportWsHandler({
    schema: () => app.graphql.schema,
    accessTokens: options.accessTokens,
    log: app.log,
    closeSlowConsumer,
  })
  app.addHook('onRoute', (route) => {
    if (route.url !== GRAPHQL_PATH) return
    if (route.wsHandler) routeBySubprotocol(route, transportWs)
    if (route.method === 'POST') allowNullExtensions(route)
  })

  app.addHook('onSend', async (request, reply, payload) => {
    const json = String(reply.getHeader('content-type')).startsWith('application/json')
    if (json && acceptsGraphqlResponse(request.headers.accept)) {
      reply.header('content-type', `${GRAPHQL_RESPONSE_TYPE}; charset=utf-8`)
    }
    return payload
  })

  await app.register(websocket, { options: { maxPayload: 64 * 1024 } })
  await app.register(mercurius, {
    schema: readFileSync(schemaPath, 'utf8'),
    resolvers: options.resolvers as IResolvers,
    path: GRAPHQL_PATH,
    graphiql: false,
    jit: 1,
    validationRules: limitRules,
    errorFormatter: formatExecution as never,
    // Mercurius would answer a context that throws with the REST error envelope.
    context: (request) => httpContext(options.accessTokens, request.headers.authorization),
    subscription: {
      emitter: options.events.emitter,
      onConnect: ({ payload }) => {
        try {
          return { principal: principalOf(options.accessTokens, payload?.authToken) }
        } catch {
          return false
        }
      },
      context: (socket) => ({
        principal: null,
        closeSlowConsumer: () => closeSlowConsumer(socket as unknown as WebSocket),
      }),
    },
  })
  if (options.graphiql) await app.register(graphiqlPlugin)
  app.graphql.addHook('preExecution', async (_schema, _document, context) => {
    if (context.tokenError) throw context.tokenError
  })
  // Mercurius runs a legacy-protocol subscription without validating it; hold it to
  // the same rules as every other operation. The error becomes the protocol's `error`.
  app.graphql.addHook('preSubscriptionExecution', async (schema, document) => {
    const errors = validateOperation(schema, document)
    if (errors.length === 0) return
    throw new GraphQLError(errors.map((error) => error.message).join('; '), {
      extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
    })
  })
}

function routeBySubprotocol(
  route: RouteOptions,
  transportWs: ReturnType<typeof createTransportWsHandler>,
) {
  const legacy = route.wsHandler as NonNullable<RouteOptions['wsHandler']>
  route.wsHandler = function (this: FastifyInstance, socket, request) {
    if (socket.protocol === LEGACY_SUBPROTOCOL) return legacy.call(this, socket, request)
    return transportWs(socket as unknown as WebSocket, request)
  }
}

/** GraphQL over HTTP lets a client send `"extensions": null`; Mercurius's schema does not. */
function allowNullExtensions(route: RouteOptions) {
  const body = (route.schema as { body?: { properties?: Record<string, { type: unknown }> } })?.body
  const extensions = body?.properties?.extensions
  if (extensions) extensions.type = ['object', 'null']
}
