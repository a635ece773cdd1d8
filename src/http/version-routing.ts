import type { IncomingMessage } from 'node:http'
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
  RouteHandlerMethod,
  RouteOptions,
} from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import type { ServiceMetrics } from '../platform/infrastructure/metrics.js'
import { isTagged } from '../platform/plugins/etag.js'
import { inVersionTwoEnvelope, RESPONSE_META_FIELDS, versionTwoEnvelope } from './envelopes.js'
import {
  type ApiVersion,
  negotiateVersion,
  pathPrefixOf,
  splitVersionPrefix,
  V1_DEPRECATED_AT,
  vendorVersionOf,
} from './version-negotiation.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The REST API version that answers this request (1 on routes outside the REST API). */
    apiVersion: ApiVersion
  }
}

const VARY = 'Accept, api-version'

/** Every request has a version: 1 unless an operation of the REST API negotiates another. */
export const versioning = fp(
  async (app: FastifyInstance) => {
    app.decorateRequest('apiVersion', 1)
  },
  { name: 'versioning' },
)

export interface VersionRoutingOptions {
  v1Sunset: Config['v1Sunset']
  countApiRequest: ServiceMetrics['countApiRequest']
}

/**
 * An operation's request gets its version (see negotiateVersion) and says it in its
 * answer; a v1 answer says when v1 ends if the operator has set it.
 */
function versionNegotiation({
  v1Sunset,
  countApiRequest,
}: VersionRoutingOptions): onRequestHookHandler {
  const v1Headers = v1Sunset ? deprecationHeaders(v1Sunset) : {}
  return function negotiate(request, reply, done) {
    const { headers } = request
    const version = negotiateVersion({
      path: request.raw.versionInPath,
      header: headers['api-version'],
      accept: headers.accept,
      contentType: headers['content-type'],
    })
    request.apiVersion = version
    countApiRequest(version)
    sendAsJson(request)
    reply.header('api-version', String(version))
    // Added to, not replaced: CORS has said that answers vary by Origin.
    const vary = reply.getHeader('vary')
    reply.header('vary', vary ? `${vary}, ${VARY}` : VARY)
    if (version === 1) reply.headers(v1Headers)
    done()
  }
}

/** RFC 9745's Deprecation, RFC 8594's Sunset, and a Link to the migration notes. */
function deprecationHeaders({ at, migrationUrl }: NonNullable<Config['v1Sunset']>) {
  return {
    deprecation: `@${Math.floor(V1_DEPRECATED_AT.getTime() / 1000)}`,
    sunset: at.toUTCString(),
    link: `<${migrationUrl}>; rel="deprecation"; type="text/html", <${migrationUrl}>; rel="sunset"; type="text/html"`,
  }
}

/** A body sent as the vendor media type is JSON, and is parsed and validated as such. */
function sendAsJson(request: FastifyRequest) {
  const contentType = request.raw.headers['content-type']
  if (contentType === undefined || vendorVersionOf(contentType) === undefined) return
  // The type is all before the first `;`; the parameters (a charset) stay.
  request.raw.headers['content-type'] = contentType.replace(/^[^;]*/, 'application/json')
}

type ResponseSchemas = Record<string, { content?: Record<string, { schema?: object }> }>

/** The first segment of a path or route (`products` of `/products/:id?x=1`). */
const rootOf = (path: string) => path.split(/[/?#]/, 2)[1] ?? ''

/**
 * How one app serves every version of its REST operations through one router: a version
 * prefix is taken off the URL before routing (Fastify's `rewriteUrl`), for the paths of
 * the REST API only, so `/api/v1/graphql` stays unknown.
 */
export function createVersionRouting(options: VersionRoutingOptions) {
  const roots = new Set<string>()
  const negotiate = versionNegotiation(options)
  return {
    rewriteUrl(request: IncomingMessage): string {
      const url = request.url ?? '/'
      const prefixed = splitVersionPrefix(url)
      if (!prefixed || !roots.has(rootOf(prefixed.rest))) return url
      request.versionInPath = prefixed.version
      return prefixed.rest
    },

    /**
     * Makes an operation's route serve every version: the request's version is negotiated
     * first, its one handler answers as v1, and a v2 request gets that answer in v2's
     * envelope, serialized by v2's schema. A request that named its version in the path
     * finds what it created under that path too.
     */
    serveEveryVersion(route: RouteOptions): void {
      roots.add(rootOf(route.url))
      // On these routes alone: a hook of every request would run on GraphQL's and the docs'.
      route.onRequest = [negotiate, route.onRequest ?? []].flat()
      const envelopes = versionTwoSchemas(route.schema?.response as ResponseSchemas | undefined)
      const answer = route.handler as (...args: Parameters<RouteHandlerMethod>) => Promise<unknown>
      route.handler = async function answerInItsVersion(request, reply) {
        const body = await answer.call(this, request, reply)
        const prefix = pathPrefixOf(request.raw)
        if (prefix) prefixLocation(reply, prefix)
        if (request.apiVersion !== 2 || body === reply) return body
        const schema = envelopes.get(reply.statusCode)
        return schema ? inVersionTwo(body as V1Body, schema, request, reply) : body
      }
    },
  }
}

export type VersionRouting = ReturnType<typeof createVersionRouting>

type Schema = Record<string, unknown>
type V1Body = { data: unknown } & Record<string, unknown>

function inVersionTwo(body: V1Body, schema: Schema, request: FastifyRequest, reply: FastifyReply) {
  // The ETag stands for the resource, not its envelope (whose timestamp changes each time):
  // it is the tag of the v1 answer, so equal in both versions.
  if (isTagged(request, reply)) {
    const v1 = reply.getSerializationFunction('200', 'application/json')
    if (v1) reply.taggedBody = v1(body)
  }
  reply.type('application/json; charset=utf-8')
  reply.serializer(
    reply.compileSerializationSchema(schema, String(reply.statusCode), 'application/json'),
  )
  return inVersionTwoEnvelope(body, request.id)
}

function prefixLocation(reply: FastifyReply, prefix: string) {
  const location = reply.getHeader('location')
  if (typeof location === 'string' && location.startsWith('/')) {
    reply.header('location', `${prefix}${location}`)
  }
}

/** v2's schema of each JSON success envelope of a route, by status. */
function versionTwoSchemas(responses: ResponseSchemas | undefined): Map<number, Schema> {
  const schemas = new Map<number, Schema>()
  for (const [status, response] of Object.entries(responses ?? {})) {
    const v1 = response.content?.['application/json']?.schema
    const v2 = v1 && /^2/.test(status) && versionTwoEnvelope(v1 as Schema, RESPONSE_META_FIELDS)
    if (v2) schemas.set(Number(status), v2)
  }
  return schemas
}
