import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import helmet, { type HelmetOptions } from 'helmet'

/**
 * Helmet's headers on every response (nosniff, frame and referrer policies, a CSP…).
 * The CSP's defaults fit the docs pages, which load only this server's scripts, but
 * `upgrade-insecure-requests` would send their requests to https where the service
 * answers plain http (behind a TLS-terminating proxy, or locally).
 */
const options: HelmetOptions = {
  contentSecurityPolicy: { directives: { 'upgrade-insecure-requests': null } },
}

/**
 * Without nonces the headers are the same for every response, so helmet runs once, at
 * start, into a recording response. (@fastify/helmet builds helmet anew per request,
 * parsing the CSP each time: several percent of a simple read's CPU.)
 */
function helmetHeaders(): Record<string, string> {
  const headers: Record<string, string> = {}
  const recorder = {
    setHeader: (name: string, value: string) => {
      headers[name.toLowerCase()] = value
    },
    removeHeader: () => {},
  }
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, () => {})
  return headers
}

async function securityHeadersPlugin(app: FastifyInstance) {
  const headers = helmetHeaders()
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(headers)
    done()
  })
}

export const securityHeaders = fp(securityHeadersPlugin, { name: 'security-headers' })
