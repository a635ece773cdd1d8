import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { Config } from './config.js'
import type { DatabaseHandle } from './db/database.js'
import { assembleModules, type DomainModule, type Infrastructure } from './domains/domain-module.js'
import { createDomainModules } from './domains/module-list.js'
import { createUsersRepository } from './domains/users/users-repository.js'
import { type ResolveHost, resolveWithSystem } from './domains/webhooks/webhook-targets.js'
import { createPersistedDocuments } from './graphql/persisted-documents.js'
import { createPersistedQueryStore } from './graphql/persisted-query-store.js'
import { GRAPHQL_PATH, graphqlPlugin } from './graphql/plugin.js'
import { apiDocs } from './http/api-docs.js'
import { openapiRoutesPlugin } from './http/openapi-routes.js'
import { createSecurityHandlers } from './http/security.js'
import { createVersionRouting, versioning } from './http/version-routing.js'
import { createAccessTokens } from './platform/infrastructure/access-tokens.js'
import { createDeviceTokens } from './platform/infrastructure/device-tokens.js'
import { createDrain, type Drain } from './platform/infrastructure/drain.js'
import type { EventBus } from './platform/infrastructure/events.js'
import { createLiveAccounts } from './platform/infrastructure/live-accounts.js'
import { createServiceMetrics, requestMetrics } from './platform/infrastructure/metrics.js'
import { createOutbox } from './platform/infrastructure/outbox.js'
import { createReadCache } from './platform/infrastructure/read-cache.js'
import { createRecentWrites } from './platform/infrastructure/recent-writes.js'
import type { RedisConnections } from './platform/infrastructure/redis.js'
import { createSessionAnnouncements } from './platform/infrastructure/session-announcements.js'
import { cors } from './platform/plugins/cors.js'
import { credentialLimits } from './platform/plugins/credential-limits.js'
import {
  answerFrameworkError,
  errorHandler,
  schemaErrorFormatter,
} from './platform/plugins/error-handler.js'
import { etag } from './platform/plugins/etag.js'
import { gracefulClose } from './platform/plugins/graceful-close.js'
import { headerRules } from './platform/plugins/header-rules.js'
import { clientErrorHandler } from './platform/plugins/http-parse-errors.js'
import { maintenance } from './platform/plugins/maintenance.js'
import { rateLimits, requestCaller } from './platform/plugins/rate-limit.js'
import { readYourWrites } from './platform/plugins/read-your-writes.js'
import { requestIdFrom, requestIdHeader } from './platform/plugins/request-id.js'
import { RequestLog, requestLoggerFactory } from './platform/plugins/request-log.js'
import { routeTable } from './platform/plugins/route-table.js'
import { securityHeaders } from './platform/plugins/security-headers.js'
import { createValidatorCompiler } from './platform/plugins/validation.js'
import type { Tracing } from './platform/telemetry/tracing.js'

export interface AppDependencies {
  database: DatabaseHandle
  events: EventBus
  /** The shared Redis clients when REDIS_URL is set; their owner closes them. */
  redis?: RedisConnections | undefined
  /** Fastify's logger settings; the server picks them, tests silence or capture them. */
  logger?: FastifyServerOptions['logger']
  loggerInstance?: FastifyServerOptions['loggerInstance']
  /** The domains to serve: every one of the service unless a test brings its own. */
  modules?: (infrastructure: Infrastructure) => readonly DomainModule[]
  /** OpenTelemetry, when tracing is on (server.ts starts it before loading this file). */
  tracing?: Tracing | undefined
  /** How webhook targets' names resolve: the system's resolver unless a test stubs it. */
  resolveHost?: ResolveHost
  /** Started by the server on SIGTERM, before it closes the app; /ready fails meanwhile. */
  drain?: Drain
}

/** The composition root: infrastructure comes in, a ready Fastify instance goes out. */
export async function buildApp(deps: AppDependencies, config: Config) {
  const metrics = createServiceMetrics()
  const versions = createVersionRouting({
    v1Sunset: config.v1Sunset,
    countApiRequest: metrics.countApiRequest,
  })
  const app = Fastify({
    logger: deps.loggerInstance ? undefined : (deps.logger ?? { level: config.logLevel }),
    loggerInstance: deps.loggerInstance,
    genReqId: requestIdFrom,
    rewriteUrl: versions.rewriteUrl,
    logController: new RequestLog(),
    childLoggerFactory: requestLoggerFactory,
    requestIdHeader: false,
    // Requests still arriving on open connections while the server closes are served
    // (see graceful-close.ts): Fastify's 503 would not be in the error envelope.
    return503OnClosing: false,
    trustProxy: config.server.trustProxy,
    requestTimeout: config.server.requestTimeoutMs,
    connectionTimeout: config.server.connectionTimeoutMs,
    keepAliveTimeout: config.server.keepAliveTimeoutMs,
    http: { connectionsCheckingInterval: config.server.timeoutCheckIntervalMs },
    frameworkErrors: answerFrameworkError,
    clientErrorHandler,
    schemaErrorFormatter,
  })
  app.setValidatorCompiler(createValidatorCompiler())

  const accessTokens = createAccessTokens({
    secret: config.auth.jwtSecret,
    ttlSeconds: config.auth.accessTokenTtlSeconds,
  })
  const deviceTokens = createDeviceTokens({
    secret: config.auth.jwtSecret,
    ttlSeconds: config.auth.deviceTokenTtlSeconds,
  })
  const liveAccounts = createLiveAccounts(createUsersRepository(deps.database.db).sessionVersionOf)
  const outbox = createOutbox({
    db: deps.database.db,
    publishWaitMs: config.redisTimeoutMs,
    events: deps.events,
    log: app.log,
    tracing: deps.tracing,
  })
  const { replica } = deps.database
  const recentWrites =
    replica &&
    createRecentWrites({
      windowMs: replica.maxLagMs,
      callerOf: (request) => requestCaller(request, accessTokens),
    })
  if (replica) {
    metrics.observeReplica(replica)
    replica.onChange((outOfUse) => {
      if (outOfUse) app.log.warn(`read replica out of use, reads go to the primary: ${outOfUse}`)
      else app.log.info('read replica in use')
    })
  }
  const sessionAnnouncements = createSessionAnnouncements({
    events: deps.events,
    outbox,
    liveAccounts,
  })
  const infrastructure: Infrastructure = {
    database: deps.database,
    events: deps.events,
    outbox,
    redis: deps.redis,
    readCache: createReadCache({
      ttlSeconds: config.readCacheTtlSeconds,
      redis: deps.redis,
      log: app.log,
    }),
    recentWrites,
    config,
    log: app.log,
    accessTokens,
    deviceTokens,
    sessionAnnouncements,
    drain: deps.drain ?? createDrain(),
    instanceId: randomUUID(),
    metrics,
    resolveHost: deps.resolveHost ?? resolveWithSystem,
  }
  const modules = (deps.modules ?? createDomainModules)(infrastructure)
  const { handlers, resolvers, loaders, socketObservers } = assembleModules(modules)
  // The relay starts first and stops last: modules may still publish while they stop.
  runLifecycles(app, [
    { name: 'outbox', start: outbox.start, stop: outbox.stop },
    {
      name: 'session-announcements',
      start: sessionAnnouncements.start,
      stop: sessionAnnouncements.stop,
    },
    ...modules,
  ])

  // First, so that its span of each request covers every other plugin's hooks.
  if (deps.tracing) await app.register(deps.tracing.fastifyPlugin)
  await app.register(securityHeaders)
  await app.register(gracefulClose)
  await app.register(requestIdHeader)
  await app.register(headerRules)
  await app.register(routeTable)
  await app.register(errorHandler)
  // Before the limits and maintenance: a preflight is answered before either looks.
  if (config.corsOrigins.length > 0) await app.register(cors, { origins: config.corsOrigins })
  await app.register(etag)
  await app.register(requestMetrics, { metrics: infrastructure.metrics })
  if (recentWrites) {
    await app.register(readYourWrites, { recentWrites, operationPaths: [GRAPHQL_PATH] })
  }
  await app.register(versioning)
  if (config.maintenanceMode) await app.register(maintenance)
  if (config.rateLimit) {
    const { max, windowMs, credentialsMax } = config.rateLimit
    await app.register(rateLimits, { max, windowMs, accessTokens, redis: deps.redis })
    await app.register(credentialLimits, {
      max: credentialsMax,
      windowMs,
      deviceTokens,
      redis: deps.redis,
    })
  }
  if (config.apiDocs) await app.register(apiDocs)
  await app.register(graphqlPlugin, {
    resolvers,
    loaders,
    accessTokens,
    liveAccounts,
    graphiql: config.development,
    introspection: config.graphqlIntrospection,
    operationBudget: app.operationBudget,
    socketsPerCaller: config.socketsPerCaller,
    socketObservers,
    countDeprecatedFieldUse: infrastructure.metrics.countDeprecatedFieldUse,
    persistedDocuments: createPersistedDocuments({
      trusted: config.trustedDocuments,
      store: createPersistedQueryStore(deps.redis),
    }),
    tracing: deps.tracing,
    recentWrites,
  })
  await app.register(openapiRoutesPlugin, {
    handlers,
    securityHandlers: createSecurityHandlers(accessTokens, liveAccounts, {
      webhookSecret: config.webhookSecret,
      metricsToken: config.metricsToken,
    }),
    versions,
    uploadMaxBytes: config.uploadMaxBytes,
  })
  return app
}

/**
 * Modules start, in order, before the server takes its first request (a failure stops
 * the start), and stop in reverse order when it closes, each whatever the others do.
 */
function runLifecycles(app: FastifyInstance, modules: readonly DomainModule[]) {
  app.addHook('onReady', async () => {
    for (const module of modules) await module.start?.()
  })
  app.addHook('onClose', async () => {
    for (const module of [...modules].reverse()) {
      try {
        await module.stop?.()
      } catch (error) {
        app.log.error({ err: error, module: module.name }, 'a module failed to stop')
      }
    }
  })
}
