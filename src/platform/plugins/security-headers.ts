import type { FastifyInstance, FastifyReply } from 'fastify'
import fp from 'fastify-plugin'
import type { HelmetOptions } from 'helmet'
import { helmetHeaders } from './helmet-adapter.js'

/**
 * Helmet's headers for a page (Swagger UI, GraphiQL). The CSP's defaults fit those pages,
 * which load only this server's scripts, but `upgrade-insecure-requests` would send their
 * requests to https where the service answers plain http (behind a TLS-terminating proxy,
 * or locally).
 */
const pageOptions: HelmetOptions = {
  contentSecurityPolicy: { directives: { 'upgrade-insecure-requests': null } },
}

/**
 * What OWASP's REST Security Cheat Sheet asks of an API's answers: nothing to load, no
 * framing, no sniffing, HTTPS only, no referrer, and no reading by other origins outside
 * CORS. Stricter than a page's policy, and six headers instead of twelve: helmet's others
 * (COOP, Origin-Agent-Cluster, DNS prefetch, X-Download-Options, X-XSS-Protection, Flash's
 * cross-domain policies) act only on a document a browser renders, and each costs Node
 * its validation and bytes on every answer.
 */
export const API_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'cross-origin-resource-policy': 'same-origin',
  'referrer-policy': 'no-referrer',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
}

/**
 * Without nonces a page's headers are the same for every page, so helmet's are found
 * once, at start. (@fastify/helmet builds helmet anew per request, parsing the CSP each
 * time.)
 */
const pageHeaders = () => helmetHeaders(pageOptions)

const isPage = (reply: FastifyReply) =>
  String(reply.getHeader('content-type')).startsWith('text/html')

/** Chosen when the answer is ready, so an error or a 404 is covered like any other. */
async function securityHeadersPlugin(app: FastifyInstance) {
  const forPages = pageHeaders()
  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.headers(isPage(reply) ? forPages : API_SECURITY_HEADERS)
    done(null, payload)
  })
}

export const securityHeaders = fp(securityHeadersPlugin, { name: 'security-headers' })
