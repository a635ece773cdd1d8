import type { FastifyInstance, RouteHandlerMethod } from 'fastify'
import openapiGlue from 'fastify-openapi-glue'
import { openapiPath } from '../paths.js'
import type { OperationId, ServiceHandlers } from './operations.js'
import type { SecurityHandlers } from './security.js'

export const specificationPath = openapiPath

export interface OpenapiRoutesOptions {
  handlers: ServiceHandlers
  securityHandlers: SecurityHandlers
}

/** Wires every operation of openapi.yaml to its handler; a missing handler stops start-up. */
async function openapiRoutes(app: FastifyInstance, options: OpenapiRoutesOptions) {
  app.decorateRequest('principal', null)
  // The glue checks security in preHandler, after the body is validated; a caller
  // without a token must hear 401, not what is wrong with its body, so check first.
  app.addHook('onRoute', (route) => {
    if (route.preHandler) {
      route.onRequest = [route.onRequest ?? [], route.preHandler].flat() as never
      route.preHandler = undefined
    }
  })
  await app.register(openapiGlue, {
    specification: specificationPath,
    securityHandlers: {
      ...options.securityHandlers,
      // The glue would answer 401 to every request of a scheme without a handler;
      // refusing to start says so at once.
      initialize: async (schemes: Record<string, unknown>) => {
        const missing = Object.keys(schemes).filter((name) => !(name in options.securityHandlers))
        if (missing.length > 0) throw new Error(`Security schemes without a handler: ${missing}`)
      },
    },
    operationResolver: (operationId: string) => {
      const handler = options.handlers[operationId as OperationId]
      if (!handler) throw new Error(`openapi.yaml operation "${operationId}" has no handler`)
      // The glue types handlers loosely; ServiceHandlers has checked them against the spec.
      return handler as unknown as RouteHandlerMethod
    },
  })
}

// Not wrapped in fastify-plugin: the onRoute hook above must stay in this scope.
export const openapiRoutesPlugin = openapiRoutes
