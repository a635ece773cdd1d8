import { dirname } from 'node:path'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import Fastify, { type FastifyServerOptions } from 'fastify'
import type { Config } from './config.js'
import type { DatabaseHandle } from './db/client.js'
import { createAuthHandlers } from './domains/auth/auth-handlers.js'
import { createAuthService } from './domains/auth/auth-service.js'
import { createRefreshTokensRepository } from './domains/auth/refresh-tokens-repository.js'
import { createProductHandlers } from './domains/catalog/products-handlers.js'
import { createProductsRepository } from './domains/catalog/products-repository.js'
import { createProductsService } from './domains/catalog/products-service.js'
import { createChatResolvers } from './domains/chat/chat-resolvers.js'
import { createMessagesRepository } from './domains/chat/messages-repository.js'
import { createMessagesService } from './domains/chat/messages-service.js'
import { createHealthHandlers } from './domains/health/health-handlers.js'
import { createUserHandlers } from './domains/users/users-handlers.js'
import { createUsersRepository } from './domains/users/users-repository.js'
import { createUsersService } from './domains/users/users-service.js'
import { graphqlPlugin } from './graphql/plugin.js'
import { openapiRoutesPlugin, specificationPath } from './http/openapi-routes.js'
import type { ServiceHandlers } from './http/operations.js'
import { createSecurityHandlers } from './http/security.js'
import { createAccessTokens } from './platform/access-tokens.js'
import { errorHandler } from './platform/error-handler.js'
import { etag } from './platform/etag.js'
import type { EventBus } from './platform/events.js'
import { maintenance } from './platform/maintenance.js'
import { rateLimits } from './platform/rate-limit.js'
import { requestIdFrom, requestIdHeader } from './platform/request-id.js'
import { routeTable } from './platform/route-table.js'
import { createValidatorCompiler } from './platform/validation.js'

export interface AppDependencies {
  database: DatabaseHandle
  events: EventBus
  /** Fastify's logger settings; the server picks them, tests silence or capture them. */
  logger?: FastifyServerOptions['logger']
  loggerInstance?: FastifyServerOptions['loggerInstance']
}

/** The composition root: infrastructure comes in, a ready Fastify instance goes out. */
export async function buildApp(deps: AppDependencies, config: Config) {
  const app = Fastify({
    logger: deps.loggerInstance ? undefined : (deps.logger ?? { level: config.logLevel }),
    loggerInstance: deps.loggerInstance,
    genReqId: requestIdFrom,
    requestIdHeader: false,
    return503OnClosing: true,
    trustProxy: config.server.trustProxy,
    requestTimeout: config.server.requestTimeoutMs,
    connectionTimeout: config.server.connectionTimeoutMs,
    keepAliveTimeout: config.server.keepAliveTimeoutMs,
    http: { connectionsCheckingInterval: config.server.timeoutCheckIntervalMs },
  })
  app.setValidatorCompiler(createValidatorCompiler())

  const { db } = deps.database
  const accessTokens = createAccessTokens({
    secret: config.auth.jwtSecret,
    ttlSeconds: config.auth.accessTokenTtlSeconds,
  })
  const usersRepository = createUsersRepository(db)
  const users = createUsersService({ users: usersRepository })
  await users.ensureAdmin(config.auth.admin, app.log)

  const messages = createMessagesService({
    messages: createMessagesRepository(db),
    events: deps.events,
  })
  const handlers: ServiceHandlers = {
    ...createHealthHandlers([
      { name: 'database', ping: deps.database.ping },
      { name: 'pub/sub', ping: deps.events.ping },
    ]),
    ...createProductHandlers(createProductsService({ products: createProductsRepository(db) })),
    ...createUserHandlers(users),
    ...createAuthHandlers(
      createAuthService({
        db,
        users: usersRepository,
        refreshTokens: createRefreshTokensRepository(db),
        accessTokens,
        refreshTokenTtlSeconds: config.auth.refreshTokenTtlSeconds,
      }),
    ),
  }

  await app.register(requestIdHeader)
  await app.register(routeTable)
  await app.register(errorHandler)
  await app.register(etag)
  if (config.maintenanceMode) await app.register(maintenance)
  if (config.rateLimit) await app.register(rateLimits, { ...config.rateLimit, accessTokens })
  await app.register(swagger, {
    mode: 'static',
    specification: { path: specificationPath, baseDir: dirname(specificationPath) },
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })
  await app.register(graphqlPlugin, {
    resolvers: createChatResolvers(messages, deps.events),
    events: deps.events,
    accessTokens,
    graphiql: config.development,
  })
  await app.register(openapiRoutesPlugin, {
    handlers,
    securityHandlers: createSecurityHandlers(accessTokens),
  })
  return app
}
