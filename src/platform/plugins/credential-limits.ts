import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../errors.js'

export interface CredentialLimitOptions {
  /** Attempts per window, per address and per account, on each guarded operation. */
  max: number
  windowMs: number
}

/** The operations that take a password: where guessing is worth limiting. */
const GUARDED = new Set(['POST /auth/login', 'POST /users'])

type Checker = ReturnType<FastifyInstance['createRateLimit']>

/**
 * Budgets of their own for login and sign-up, beside the general one: per address, so
 * no token a guesser attaches buys it fresh attempts (the general budget is per user
 * when a valid token comes along), and per target account, so guesses spread over
 * many addresses still meet a limit.
 */
async function credentialLimitsPlugin(app: FastifyInstance, options: CredentialLimitOptions) {
  const limiter = (name: string, key: (request: FastifyRequest) => string) =>
    app.createRateLimit({
      max: options.max,
      timeWindow: options.windowMs,
      keyGenerator: (request) => `credentials:${name}:${request.routeOptions.url}:${key(request)}`,
    })
  const byAddress = limiter('address', (request) => request.ip)
  const byAccount = limiter('account', (request) => accountOf(request) as string)

  app.addHook('onRoute', (route) => {
    if (![route.method].flat().some((method) => GUARDED.has(`${method} ${route.url}`))) return
    // preValidation: the body is parsed by then (the account is in it), and the
    // preHandler hooks of these routes are moved before parsing (openapi-routes.ts).
    const guard = async (request: FastifyRequest, reply: FastifyReply) => {
      await refuseWhenExceeded(byAddress, request, reply)
      // No account named (a body the schema will refuse): the address budget is the one.
      if (accountOf(request) !== undefined) await refuseWhenExceeded(byAccount, request, reply)
    }
    route.preValidation = [guard, route.preValidation ?? []].flat() as never
  })
}

/** The account an attempt targets: its email, as accounts are unique regardless of case. */
function accountOf(request: FastifyRequest): string | undefined {
  const { email } = (request.body ?? {}) as { email?: unknown }
  return typeof email === 'string' ? email.toLowerCase() : undefined
}

async function refuseWhenExceeded(check: Checker, request: FastifyRequest, reply: FastifyReply) {
  const result = await check(request)
  // isAllowed: an allow-listed caller, which these checkers have none of.
  if (result.isAllowed || !result.isExceeded) return
  const { ttlInSeconds } = result
  reply.header('retry-after', ttlInSeconds)
  throw new AppError(
    'RATE_LIMITED',
    429,
    `Too many attempts on this operation: retry in ${ttlInSeconds} s`,
  )
}

export const credentialLimits = fp(credentialLimitsPlugin, {
  name: 'credential-limits',
  dependencies: ['rate-limits'],
})
