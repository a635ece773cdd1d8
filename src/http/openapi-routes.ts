import type { FastifyInstance, FastifyRequest, RouteHandlerMethod } from 'fastify'
import openapiGlue from 'fastify-openapi-glue'
import { openapiPath } from '../paths.js'
import { badRequest } from '../platform/errors.js'
import type { OperationId, ServiceHandlers } from './operations.js'
import { keepRawBody } from './raw-body.js'
import type { SecurityHandlers } from './security.js'

export const specificationPath = openapiPath

export interface OpenapiRoutesOptions {
  handlers: ServiceHandlers
  securityHandlers: SecurityHandlers
}

/** Wires every operation of openapi.yaml to its handler; a missing handler stops start-up. */
async function openapiRoutes(app: FastifyInstance, options: OpenapiRoutesOptions) {
  app.decorateRequest('principal', null)
  // Bodies are JSON. Fastify's text/plain parser would hand a handler a string that no
  // schema checked (the body schemas apply to application/json): refused with 415.
  app.removeContentTypeParser('text/plain')
  // The glue checks security in preHandler, after the body is validated; a caller
  // without a token must hear 401, not what is wrong with its body, so check first: on
  // request, or, for a signature over the body's bytes, once they are read.
  app.addHook('onRoute', (route) => {
    const signedBody = route.config?.rawBody === true
    if (signedBody) route.preParsing = [route.preParsing ?? [], keepRawBody].flat() as never
    if (route.preHandler) {
      const stage = signedBody ? 'preValidation' : 'onRequest'
      route[stage] = [route[stage] ?? [], route.preHandler].flat() as never
      route.preHandler = undefined
    }
    // Without a body (and so without a Content-Type) no schema runs at all.
    if (route.schema?.body) {
      route.preValidation = [route.preValidation ?? [], requireBody].flat() as never
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

async function requireBody(request: FastifyRequest) {
  if (request.body === undefined) {
    throw badRequest('This operation needs a JSON body, sent as application/json')
  }
}

// Not wrapped in fastify-plugin: the onRoute hook above must stay in this scope.
export const openapiRoutesPlugin = openapiRoutes
