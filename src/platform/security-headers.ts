import type { FastifyHelmetOptions } from '@fastify/helmet'

/**
 * Helmet's headers on every response (nosniff, frame and referrer policies, a CSP…).
 * The CSP's defaults fit the docs pages, which load only this server's scripts, but
 * `upgrade-insecure-requests` would send their requests to https where the service
 * answers plain http (behind a TLS-terminating proxy, or locally).
 */
export const securityHeaders: FastifyHelmetOptions = {
  contentSecurityPolicy: { directives: { 'upgrade-insecure-requests': null } },
}
