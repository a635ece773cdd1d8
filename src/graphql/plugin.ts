import { readFileSync } from 'node:fs'
import websocket from '@fastify/websocket'
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify'
import { buildSchema, type DocumentNode, GraphQLError, getOperationAST } from 'graphql'
import mercurius, { type IResolvers } from 'mercurius'
import type { WebSocket } from 'ws'
import type { Resolvers } from '../../generated/graphql.js'
import { graphqlSchemaPath } from '../paths.js'
import type { AccessTokens } from '../platform/infrastructure/access-tokens.js'
import type { LiveAccounts } from '../platform/infrastructure/live-accounts.js'
import type { RecentWrites } from '../platform/infrastructure/recent-writes.js'
import type { OperationBudget } from '../platform/plugins/rate-limit.js'
import { markWrite } from '../platform/plugins/read-your-writes.js'
import type { Tracing } from '../platform/telemetry/tracing.js'
import { beforeExecution, createContextFactory } from './context.js'
import { createDeprecationCounter } from './deprecations.js'
import { acceptsGraphqlResponse, formatExecution, GRAPHQL_RESPONSE_TYPE } from './errors.js'
import { graphiqlPlugin } from './graphiql.js'
import { createVariablesCheck, LIMITS, limitErrors, parseOptions } from './limits.js'
import { type GraphQLLoaders, loaderResolvers } from './loaders.js'
import { traceHttpOperations } from './operation-spans.js'
import type { PersistedDocuments } from './persisted-documents.js'
import { persistedDocumentsOverHttp } from './persisted-http.js'
import { bytesOverCap, tooLargeResult } from './response-cap.js'
import { withSubscriptions } from './subscriptions.js'
import { createAdmission } from './websocket/admission.js'
import { createWebSocketServer } from './websocket/server.js'
import type { SocketObserver } from './websocket/socket-seats.js'
import { createSocketSessions } from './websocket/socket-sessions.js'
import { createUpgradeHandler } from './websocket/upgrades.js'

export const schemaPath = graphqlSchemaPath
export const GRAPHQL_PATH = '/graphql'

const SLOW_CONSUMER_CLOSE = { code: 1008, reason: 'Subscriber too slow: events were dropped' }
const GOING_AWAY_CLOSE = { code: 1001, reason: 'The server is shutting down' }
/** How long a closing socket may take to answer the close before it is cut. */
const CLOSE_HANDSHAKE_MS = 1000

export interface GraphqlOptions {
  resolvers: Resolvers
  /** Batched fields; each gets a resolver that goes through its loader. */
  loaders: GraphQLLoaders
  accessTokens: AccessTokens
  liveAccounts: LiveAccounts
  /** Serves GraphiQL at /graphiql. */
  graphiql: boolean
  /** Answers introspection queries (see Config). */
  introspection: boolean
  /** The rate limiter's budget for operations over WebSockets; absent when limits are off. */
  operationBudget: OperationBudget | undefined
  /** Open WebSockets per caller; undefined: no cap. */
  socketsPerCaller: number | undefined
  /** Told of each WebSocket's life and of the user it belongs to. */
  socketObservers: readonly SocketObserver[]
  /** Told of each operation's use of a field marked @deprecated. */
  countDeprecatedFieldUse: (field: string) => void
  /** Automatic persisted queries, or only the trusted documents (persisted-documents.ts). */
  persistedDocuments: PersistedDocuments
  /** A span per operation, when tracing is on. */
  tracing?: Pick<Tracing, 'startOperation'> | undefined
  /** Told of each mutation's caller, with a read replica (read-your-writes.ts). */
  recentWrites?: RecentWrites | undefined
}

/** Cuts a slow subscriber off, and frees its socket even if it never reads the close. */
function closeSlowConsumer(socket: WebSocket) {
  socket.close(SLOW_CONSUMER_CLOSE.code, SLOW_CONSUMER_CLOSE.reason)
  setTimeout(() => socket.terminate(), 1000).unref()
}

/** Refuses an operation over HTTP the way Mercurius refuses an invalid one. */
function refuseIfAny(errors: readonly GraphQLError[]) {
  if (errors.length > 0) throw Object.assign(new Error('Graphql validation error'), { errors })
}

/**
 * /graphql: Mercurius for HTTP; graphql-ws's server for WebSockets, in both subprotocols
 * (websocket/). Both run the same schema and resolvers with the same context.
 */
export async function graphqlPlugin(app: FastifyInstance, options: GraphqlOptions) {
  const contexts = createContextFactory(options.accessTokens, options.liveAccounts, options.loaders)
  const schema = () => app.graphql.schema
  const rules = { introspection: options.introspection }
  const countDeprecatedFields = createDeprecationCounter(options.countDeprecatedFieldUse)
  const persisted = persistedDocumentsOverHttp(options.persistedDocuments)
  const sessions = createSocketSessions()
  options.liveAccounts.onSessionsEnded(sessions.sessionsEnded)
  const serve = createWebSocketServer({
    schema,
    contexts,
    admit: createAdmission({
      schema,
      operationBudget: options.operationBudget,
      rules,
      documents: options.persistedDocuments,
    }),
    admitted: countDeprecatedFields,
    log: app.log,
    closeSlowConsumer,
    sessions,
    tracing: options.tracing,
    recentWrites: options.recentWrites,
  })
  const upgrade = createUpgradeHandler({
    serve,
    contexts,
    socketsPerCaller: options.socketsPerCaller,
    socketObservers: options.socketObservers,
  })
  app.addHook('onRoute', (route) => {
    if (route.url !== GRAPHQL_PATH) return
    // Mercurius's GET route, as @fastify/websocket reads it (registered after this hook).
    if (route.method === 'GET') route.wsHandler = upgrade
    if (route.method === 'POST') allowNullExtensions(route)
    route.preHandler = [persisted.preHandler, ...[route.preHandler ?? []].flat()]
  })

  app.addHook('onSend', async (request, reply, payload) => {
    const json = String(reply.getHeader('content-type')).startsWith('application/json')
    if (!json) return payload
    if (acceptsGraphqlResponse(request.headers.accept)) {
      reply.header('content-type', `${GRAPHQL_RESPONSE_TYPE}; charset=utf-8`)
    }
    const bytes = typeof payload === 'string' ? bytesOverCap(payload) : undefined
    return bytes === undefined ? payload : JSON.stringify(tooLargeResult(bytes))
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
  const { Subscription, ...resolvers } = options.resolvers
  await app.register(mercurius, {
    schema: withSubscriptions(buildSchema(readFileSync(schemaPath, 'utf8')), Subscription),
    resolvers: withBatchedFields(resolvers, loaderResolvers(options.loaders)) as IResolvers,
    path: GRAPHQL_PATH,
    graphiql: false,
    jit: 1,
    cache: LIMITS.documentsKept,
    // The token limit applies while Mercurius parses, before any hook sees a document.
    graphql: { parseOptions },
    errorFormatter: formatExecution as never,
    // A refused token is kept in the context, not thrown: Mercurius would answer a
    // context that throws with the REST error envelope.
    context: (request) =>
      contexts.create({ authorization: request.headers.authorization }, { requestId: request.id }),
  })
  if (options.graphiql) await app.register(graphiqlPlugin)
  // HTTP's share of the checks WebSocket operations pass in websocket/admission.ts. The
  // service's limits run before graphql's own rules (Mercurius validates a document only
  // the first time it sees it); ranges and the cost again with the variables, which only
  // execution has.
  app.graphql.addHook('preValidation', async (schema, document) => {
    refuseIfAny(limitErrors(schema, document, undefined, rules))
  })
  const variablesErrors = createVariablesCheck()
  app.graphql.addHook('preExecution', async (schema, document, context, variables) => {
    beforeExecution(context)
    countDeprecatedFields(schema, document)
    const { request } = context.reply
    const operation = operationOf(document, request)
    refuseSubscription(operation)
    refuseIfAny(variablesErrors(schema, document, variables ?? {}))
    await persisted.passed(request)
    // Counted once it runs, errors or not: a field may commit before another fails.
    if (options.recentWrites && operation === 'mutation') markWrite(request)
  })
  if (options.tracing) traceHttpOperations(app, options.tracing)
}

/**
 * The batched fields added to their types' resolvers, field by field: a type can have
 * both (User: `email` resolved, `posts` batched), and one map must not replace the other.
 */
function withBatchedFields(
  resolvers: Resolvers,
  batched: ReturnType<typeof loaderResolvers>,
): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...resolvers }
  for (const [type, fields] of Object.entries(batched)) {
    merged[type] = { ...(merged[type] as object | undefined), ...fields }
  }
  return merged
}

/** GraphQL over HTTP lets a client send `"extensions": null`; Mercurius's schema does not. */
function allowNullExtensions(route: RouteOptions) {
  const body = (route.schema as { body?: { properties?: Record<string, { type: unknown }> } })?.body
  const extensions = body?.properties?.extensions
  if (extensions) extensions.type = ['object', 'null']
}

/** The type of the operation a request over HTTP runs: its `operationName`'s. */
function operationOf(document: DocumentNode, request: FastifyRequest) {
  const { operationName } = (request.body ?? request.query ?? {}) as { operationName?: unknown }
  const name = typeof operationName === 'string' ? operationName : undefined
  return getOperationAST(document, name)?.operation
}

/**
 * Over HTTP, a subscription would run once with no event to resolve; its place is the
 * WebSocket on the same path.
 */
function refuseSubscription(operation: ReturnType<typeof operationOf>) {
  if (operation !== 'subscription') return
  throw new GraphQLError('Subscriptions are served over WebSocket at this path, not over HTTP', {
    extensions: { code: 'BAD_USER_INPUT' },
  })
}
