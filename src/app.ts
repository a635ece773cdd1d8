import { dirname } from 'node:path'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { Config } from './config.js'
import type { DatabaseHandle } from './db/client.js'
import { assembleModules, type DomainModule, type Infrastructure } from './domains/module.js'
import { createDomainModules } from './domains/modules.js'
import { graphqlPlugin } from './graphql/plugin.js'
import { openapiRoutesPlugin, specificationPath } from './http/openapi-routes.js'
import { createSecurityHandlers } from './http/security.js'
import { createAccessTokens } from './platform/access-tokens.js'
import { errorHandler } from './platform/error-handler.js'
import { etag } from './platform/etag.js'
import type { EventBus } from './platform/events.js'
import { maintenance } from './platform/maintenance.js'
import { rateLimits } from './platform/rate-limit.js'
import type { RedisConnections } from './platform/redis.js'
import { requestIdFrom, requestIdHeader } from './platform/request-id.js'
import { routeTable } from './platform/route-table.js'
import { createValidatorCompiler } from './platform/validation.js'

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
}

/** The composition root: infrastructure comes in, a ready Fastify instance goes out. */
export async function buildApp(deps: AppDependencies, config: Config) {
  const app = Fastify({
    logger: deps.loggerInstance ? undefined : (deps.logger ?? { level: config.logLevel }),
    loggerInstance: deps.loggerInstance,
    genReqId: requestIdFrom,
    requestIdHeader: false,
    return503OnClosing: true,
  })
  app.setValidatorCompiler(createValidatorCompiler())

  const accessTokens = createAccessTokens({
    secret: config.auth.jwtSecret,
    ttlSeconds: config.auth.accessTokenTtlSeconds,
  })
  const infrastructure: Infrastructure = {
    database: deps.database,
    events: deps.events,
    redis: deps.redis,
    config,
    log: app.log,
    accessTokens,
  }
  const modules = (deps.modules ?? createDomainModules)(infrastructure)
  const { handlers, resolvers, loaders } = assembleModules(modules)
  runLifecycles(app, modules)

  await app.register(requestIdHeader)
  await app.register(routeTable)
  await app.register(errorHandler)
  await app.register(etag)
  if (config.maintenanceMode) await app.register(maintenance)
  if (config.rateLimit) {
    await app.register(rateLimits, { ...config.rateLimit, accessTokens, redis: deps.redis })
  }
  await app.register(swagger, {
    mode: 'static',
    specification: { path: specificationPath, baseDir: dirname(specificationPath) },
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })
  await app.register(graphqlPlugin, {
    resolvers,
    loaders,
    events: deps.events,
    accessTokens,
    graphiql: config.development,
    operationBudget: app.operationBudget,
    socketsPerCaller: config.socketsPerCaller,
  })
  await app.register(openapiRoutesPlugin, {
    handlers,
    securityHandlers: createSecurityHandlers(accessTokens),
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
