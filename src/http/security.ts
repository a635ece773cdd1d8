import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyRequest, onRequestHookHandler } from 'fastify'
import { AppError, forbidden, unauthenticated, unavailable } from '../platform/errors.js'
import {
  type AccessTokens,
  bearerTokenOf,
  type Principal,
  type Role,
} from '../platform/infrastructure/access-tokens.js'
import type { LiveAccounts } from '../platform/infrastructure/live-accounts.js'
import { verifyWebhookSignature } from '../platform/webhook-signatures.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the bearerAuth security handler on operations that require it. */
    principal: Principal | null
  }
}

/**
 * One handler per security scheme of openapi.yaml: it passes, or throws why the request
 * is refused, or answers a promise of either while it asks whether the token's account
 * still exists. A requirement's list names the roles allowed (`bearerAuth: [admin]`); an
 * empty list admits any valid token.
 */
export function createSecurityHandlers(
  accessTokens: AccessTokens,
  liveAccounts: LiveAccounts,
  secrets: { webhookSecret?: string | undefined; metricsToken?: string | undefined } = {},
) {
  const { webhookSecret, metricsToken } = secrets
  /** The token's principal, let in when it has one of the roles (any, when none is named). */
  function admit(
    request: FastifyRequest,
    token: string,
    roles: readonly Role[],
    why: () => string,
  ) {
    const principal = liveAccounts.confirm(accessTokens.verify(token))
    const allowed = (confirmed: Principal) => {
      if (roles.length > 0 && !roles.includes(confirmed.role)) throw forbidden(why())
      request.principal = confirmed
    }
    // A gone account is refused before its role is looked at: 401 on every route.
    if (principal instanceof Promise) return principal.then(allowed)
    allowed(principal)
  }

  return {
    /** A scraper's METRICS_TOKEN, or an admin's access token. */
    metricsToken(request: FastifyRequest) {
      const token = bearerToken(request)
      if (metricsToken && sameSecret(token, metricsToken)) return
      return admit(request, token, ['admin'], () => 'Metrics need an admin or METRICS_TOKEN')
    },

    /** Runs once the body's bytes are read (see openapi-routes.ts). */
    webhookSignature(request: FastifyRequest) {
      if (!webhookSecret) throw unavailable('Webhooks are not configured here (WEBHOOK_SECRET)')
      verifyWebhookSignature(webhookSecret, {
        timestamp: headerOf(request, 'x-webhook-timestamp'),
        signature: headerOf(request, 'x-webhook-signature'),
        body: request.rawBody ?? Buffer.alloc(0),
      })
    },

    bearerAuth(request: FastifyRequest, roles: readonly Role[]) {
      // Worded only for a refusal: not on every request's path.
      const why = () => `This operation needs the ${roles.join(' or ')} role`
      return admit(request, bearerToken(request), roles, why)
    },
  }
}

export type SecurityHandlers = ReturnType<typeof createSecurityHandlers>

type SchemeHandler = (request: FastifyRequest, scopes: readonly string[]) => Promise<void> | void

/** An operation's `security` in openapi.yaml: any one requirement, every scheme of it. */
export type SecurityRequirements = readonly Readonly<Record<string, readonly string[]>>[]

/**
 * The hook that checks an operation's security: it passes when every scheme of one of its
 * requirements passes, and otherwise refuses with why the first requirement failed.
 * Synchronous while the caller's account is known to exist, so such a request pays no
 * promise for it and a refusal no stack. A requirement that must ask the database is
 * the last one tried: no operation of openapi.yaml has two.
 */
export function securityCheck(
  requirements: SecurityRequirements,
  handlers: SecurityHandlers,
): onRequestHookHandler {
  const schemes = handlers as unknown as Record<string, SchemeHandler>
  return function checkSecurity(request, _reply, done) {
    let refusal: unknown
    for (const requirement of requirements) {
      try {
        const asking = checkRequirement(request, requirement, schemes)
        if (asking) return void asking.then(() => done(), done)
        return done()
      } catch (error) {
        refusal ??= error
      }
    }
    done(
      refusal instanceof AppError ? refusal : unauthenticated('A valid bearer token is required'),
    )
  }
}

/** Runs every scheme of one requirement; a promise while one of them asks the database. */
function checkRequirement(
  request: FastifyRequest,
  requirement: SecurityRequirements[number],
  schemes: Record<string, SchemeHandler>,
): Promise<unknown> | undefined {
  let asking: Promise<void>[] | undefined
  for (const scheme in requirement) {
    // Start-up has checked every scheme has one; were one missing, this would refuse.
    const handler = schemes[scheme] as SchemeHandler
    const answer = handler(request, requirement[scheme] ?? [])
    if (!answer) continue
    asking ??= []
    asking.push(answer)
  }
  return asking && Promise.all(asking)
}

function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization
  if (!header) throw unauthenticated('A bearer token is required')
  const token = bearerTokenOf(header)
  if (!token) throw unauthenticated('The Authorization header must be "Bearer <token>"')
  return token
}

/** Compared in constant time, so the answer's timing tells nothing of the secret. */
function sameSecret(given: string, secret: string): boolean {
  const [a, b] = [
    createHash('sha256').update(given).digest(),
    createHash('sha256').update(secret).digest(),
  ]
  return timingSafeEqual(a, b)
}

/** A header sent once; a repeated one counts as absent. */
function headerOf(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name]
  return typeof value === 'string' ? value : undefined
}

/** The caller of an operation whose spec requires bearerAuth. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw unauthenticated('A bearer token is required')
  return request.principal
}
