import type { FastifyRequest } from 'fastify'
import {
  type AccessTokens,
  bearerTokenOf,
  type Principal,
  type Role,
} from '../platform/access-tokens.js'
import { forbidden, unauthenticated } from '../platform/errors.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the bearerAuth security handler on operations that require it. */
    principal: Principal | null
  }
}

/**
 * One handler per security scheme of openapi.yaml. A requirement's list names the
 * roles allowed (`bearerAuth: [admin]`); an empty list admits any valid token.
 */
export function createSecurityHandlers(accessTokens: AccessTokens) {
  return {
    async bearerAuth(request: FastifyRequest, _reply: unknown, roles: Role[]) {
      const principal = accessTokens.verify(bearerToken(request))
      if (roles.length > 0 && !roles.includes(principal.role)) {
        throw forbidden(`This operation needs the ${roles.join(' or ')} role`)
      }
      request.principal = principal
    },
  }
}

export type SecurityHandlers = ReturnType<typeof createSecurityHandlers>

function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization
  if (!header) throw unauthenticated('A bearer token is required')
  const token = bearerTokenOf(header)
  if (!token) throw unauthenticated('The Authorization header must be "Bearer <token>"')
  return token
}

/** The caller of an operation whose spec requires bearerAuth. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw unauthenticated('A bearer token is required')
  return request.principal
}
