import { readFileSync } from 'node:fs'
import multipart from '@fastify/multipart'
import type {
  FastifyInstance,
  FastifyRequest,
  preValidationHookHandler,
  RouteHandlerMethod,
} from 'fastify'
import openapiGlue from 'fastify-openapi-glue'
import { parse } from 'yaml'
import { openapiPath } from '../paths.js'
import { badRequest, unsupportedMediaType } from '../platform/errors.js'
import type { OperationId, ServiceHandlers } from './operations.js'
import { keepRawBody } from './raw-body.js'
import { type SecurityHandlers, type SecurityRequirements, securityCheck } from './security.js'
import type { VersionRouting } from './version-routing.js'

export const specificationPath = openapiPath

export interface OpenapiRoutesOptions {
  handlers: ServiceHandlers
  securityHandlers: SecurityHandlers
  versions: VersionRouting
  /** The largest file a multipart upload may hold. */
  uploadMaxBytes: number
}

/** Wires every operation of openapi.yaml to its handler; a missing handler stops start-up. */
async function openapiRoutes(app: FastifyInstance, options: OpenapiRoutesOptions) {
  app.decorateRequest('principal', null)
  // Bodies are JSON. Fastify's text/plain parser would hand a handler a string that no
  // schema checked (the body schemas apply to application/json): refused with 415, by a
  // parser of its own so the glue, which looks for a parser of each media type the spec
  // names (text/plain answers too), finds one and does not warn.
  app.removeContentTypeParser('text/plain')
  app.addContentTypeParser(RESPONSE_ONLY_MEDIA_TYPES, refuseBody)
  const specification = parse(readFileSync(specificationPath, 'utf8')) as OpenapiDocument
  const security = securityByRoute(specification, options.securityHandlers)
  const { streamed, parsed } = splitByBody(specification)
  // Security is checked here rather than by the glue, whose check runs in preHandler,
  // after the body is validated: a caller without a token must hear 401, not what is
  // wrong with its body. So on request, or, for a signature over the body's bytes, once
  // they are read.
  app.addHook('onRoute', (route) => {
    options.versions.serveEveryVersion(route)
    const signedBody = route.config?.rawBody === true
    if (signedBody) route.preParsing = [route.preParsing ?? [], keepRawBody].flat() as never
    // The HEAD route Fastify adds for a GET is the GET's.
    const method = route.method === 'HEAD' ? 'GET' : route.method
    const requirements = security.get(`${method} ${route.url}`)
    if (requirements) {
      const stage = signedBody ? 'preValidation' : 'onRequest'
      const check = securityCheck(requirements, options.securityHandlers)
      route[stage] = [route[stage] ?? [], check].flat() as never
    }
    // A multipart body streams to its handler, which reads the parts itself: there is no
    // parsed body for the spec's schema of it to check.
    if (route.schema && multipartOnly(route.schema.body)) {
      const { body: _streamed, ...schema } = route.schema
      route.schema = schema
    }
    // Without a body (and so without a Content-Type) no schema runs at all.
    if (route.schema?.body) {
      route.preValidation = [route.preValidation ?? [], requireBody].flat() as never
    }
  })
  const glue = (specification: OpenapiDocument) => ({
    specification,
    operationResolver: (operationId: string) => {
      const handler = options.handlers[operationId as OperationId]
      if (!handler) throw new Error(`openapi.yaml operation "${operationId}" has no handler`)
      // The glue types handlers loosely; ServiceHandlers has checked them against the spec.
      return handler as unknown as RouteHandlerMethod
    },
  })
  await app.register(async (json) => {
    await json.register(openapiGlue, glue(parsed))
  })
  // Multipart bodies (file uploads) are parsed by their handlers, part by part, as they
  // stream in; one part, the file, under its size limit. The plugin's hooks (which clean
  // up files saved to disk) run on these operations alone; a multipart body sent to any
  // other finds no parser there, and is refused with 415.
  await app.register(async (uploads) => {
    await uploads.register(multipart, {
      limits: { fileSize: options.uploadMaxBytes, files: 1, fields: 0, parts: 1, headerPairs: 20 },
    })
    await uploads.register(openapiGlue, glue(streamed))
  })
}

interface OpenapiDocument {
  paths: Record<string, Record<string, unknown>>
  security?: SecurityRequirements
}

/**
 * The security of every operation that has some, by method and Fastify's URL (`{id}` as
 * `:id`, as the glue writes it). A scheme without a handler stops start-up: the service
 * would otherwise refuse every request of its operations.
 */
function securityByRoute(specification: OpenapiDocument, handlers: SecurityHandlers) {
  const routes = new Map<string, SecurityRequirements>()
  for (const [path, item] of Object.entries(specification.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!HTTP_METHODS.has(method)) continue
      const requirements =
        (operation as { security?: SecurityRequirements }).security ?? specification.security
      if (!requirements?.length) continue
      const missing = requirements.flatMap(Object.keys).filter((scheme) => !(scheme in handlers))
      if (missing.length > 0) throw new Error(`Security schemes without a handler: ${missing}`)
      routes.set(`${method.toUpperCase()} ${path.replace(/{(\w+)}/g, ':$1')}`, requirements)
    }
  }
  return routes
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'])

/**
 * The description in two: the operations whose body streams as multipart/form-data, and
 * the rest. Each keeps everything else (components, security), so each is valid alone.
 */
function splitByBody(specification: OpenapiDocument) {
  const part = (streams: boolean): OpenapiDocument => ({
    ...specification,
    paths: Object.fromEntries(
      Object.entries(specification.paths).flatMap(([path, item]) => {
        const kept = Object.entries(item).filter(
          ([key, operation]) =>
            !HTTP_METHODS.has(key) ||
            multipartOnly((operation as { requestBody?: unknown }).requestBody) === streams,
        )
        return kept.some(([key]) => HTTP_METHODS.has(key)) ? [[path, Object.fromEntries(kept)]] : []
      }),
    ),
  })
  return { streamed: part(true), parsed: part(false) }
}

/** Media types the spec names for answers only: a request body sent as one is refused. */
const RESPONSE_ONLY_MEDIA_TYPES = ['text/plain', 'text/csv', '*/*']

const multipartOnly = (body: unknown) => {
  const content = (body as { content?: object } | undefined)?.content
  return (
    content !== undefined && Object.keys(content).every((type) => type === 'multipart/form-data')
  )
}

async function refuseBody(request: FastifyRequest) {
  throw unsupportedMediaType(
    `${request.headers['content-type']} bodies are not accepted; send application/json`,
  )
}

/** Synchronous, as it runs on every write: an async hook costs a promise a request. */
const requireBody: preValidationHookHandler = (request, _reply, done) => {
  if (request.body !== undefined) return done()
  done(badRequest('This operation needs a JSON body, sent as application/json'))
}

// Not wrapped in fastify-plugin: the onRoute hook above must stay in this scope.
export const openapiRoutesPlugin = openapiRoutes
