import fastifyCors from '@fastify/cors'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { forbidden } from '../errors.js'
import { sendError } from './error-handler.js'

/** Every method some path serves: a preflight names one, the actual request gets the 405. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']
/** The request headers the API reads, beyond those a browser sends unasked. */
const ALLOWED_HEADERS = [
  'authorization',
  'content-type',
  'idempotency-key',
  'if-match',
  'if-none-match',
  'api-version',
  'x-request-id',
  'traceparent',
]
/** The answer headers a client acts on: a browser hides every other from its script. */
const EXPOSED_HEADERS = [
  'etag',
  'location',
  'x-request-id',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'retry-after',
  'deprecation',
  'sunset',
  'link',
  'api-version',
]
/** Chromium keeps a preflight's answer at most 2 hours; Firefox a day. */
const PREFLIGHT_MAX_AGE_SECONDS = 7200

export interface CorsOptions {
  /** The exact origins whose pages may call the API (CORS_ORIGINS). */
  origins: readonly string[]
}

const isPreflight = (request: FastifyRequest) =>
  request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined

const isUpgrade = (request: FastifyRequest) =>
  request.headers.upgrade?.toLowerCase() === 'websocket'

/**
 * Cross-origin reads for the listed origins, by @fastify/cors: the origin echoed, never
 * `*`, and no credentials, since tokens travel in Authorization, not in cookies. Its
 * preflights are answered in the first hooks, so the rate limiter never counts them.
 * Any other origin is told 403 in the envelope, with no Access-Control-* header, on its
 * preflights and on its WebSocket upgrades: a browser sends cross-origin WebSockets
 * unasked, and only the server can refuse them. An upgrade without Origin is a native
 * client's, which no page drives.
 */
async function corsPlugin(app: FastifyInstance, options: CorsOptions) {
  const listed = new Set(options.origins)
  const refusedOrigin = (request: FastifyRequest) => {
    const { origin } = request.headers
    return origin !== undefined && !listed.has(origin) ? origin : undefined
  }
  // Answered here, not thrown: /graphql's error handler is Mercurius's, whose answer to
  // an upgrade would be a GraphQL result with status 200.
  app.addHook('onRequest', (request, reply, done) => {
    const upgrade = isUpgrade(request)
    const origin = upgrade || isPreflight(request) ? refusedOrigin(request) : undefined
    if (origin === undefined) return done()
    sendError(reply, forbidden(`Origin ${origin} is not allowed to call this API (CORS_ORIGINS)`))
    // Node's HTTP parser has let go of an upgrade's socket, so nothing else would end it.
    if (upgrade) reply.raw.once('finish', () => request.raw.socket.destroy())
  })
  await app.register(fastifyCors, {
    origin: (origin, callback) => callback(null, origin !== undefined && listed.has(origin)),
    methods: METHODS,
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
    // An OPTIONS from a listed origin without Access-Control-Request-Method would be a
    // plain-text 400 outside the envelope; answering it as a preflight harms no one.
    strictPreflight: false,
  })
}

export const cors = fp(corsPlugin, { name: 'cors', dependencies: ['error-handler'] })
