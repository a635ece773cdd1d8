import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../errors.js'
import { createAttemptBudgets } from '../infrastructure/attempt-budgets.js'
import type { DeviceTokens } from '../infrastructure/device-tokens.js'
import type { RedisConnections } from '../infrastructure/redis.js'

export interface CredentialLimitOptions {
  /** Attempts per window, per address and per account (or device), on each guarded operation. */
  max: number
  windowMs: number
  deviceTokens: DeviceTokens
  /** With Redis the budgets are counted there, so every instance draws on the same ones. */
  redis: RedisConnections | undefined
}

/**
 * The guarded operations: the budgets an attempt draws on, and, for those that count
 * only failures, the status that is one (any other answer gives the attempt back).
 */
interface Guard {
  budgets(request: FastifyRequest, deviceTokens: DeviceTokens): readonly string[]
  failure?: number
}

const GUARDS: Record<string, Guard> = {
  // Every sign-up counts: each one that succeeds stores an account.
  'POST /users': { budgets: (request) => budgetsOf('sign-up', request) },
  // Only a wrong email or password fails: a refused body or an outage is no guess.
  'POST /auth/login': { budgets: loginBudgets, failure: 401 },
  // Per account: a stolen access token must not buy guesses at the password.
  'POST /auth/password': {
    budgets: (request) => [`credentials:password:account:${request.principal?.userId}`],
    failure: 401,
  },
  // Per account, as the password: six digits are a million guesses at most.
  'POST /auth/2fa/enable': {
    budgets: (request) => [`credentials:second-factor:account:${request.principal?.userId}`],
    failure: 401,
  },
  'POST /auth/2fa/disable': {
    budgets: (request) => [`credentials:second-factor:account:${request.principal?.userId}`],
    failure: 401,
  },
  // Every request counts: each one for a known address sends an email.
  'POST /auth/password-reset': { budgets: (request) => budgetsOf('password-reset', request) },
  // A token guessed or reused is refused with 400, as is a body that breaks the rules.
  'POST /auth/password-reset/confirm': {
    budgets: (request) => [addressBudget('password-reset-confirm', request)],
    failure: 400,
  },
  'POST /auth/verify-email': {
    budgets: (request) => [addressBudget('verify-email', request)],
    failure: 400,
  },
}

/** The budgets an attempt took, and the status that keeps them spent. */
const TAKEN = Symbol('credential budgets taken')
type GuardedRequest = FastifyRequest & { [TAKEN]?: { budgets: readonly string[]; failure: number } }

/**
 * Budgets of their own for login, sign-up and the other credential operations, beside
 * the general one: per address, so no token a guesser attaches buys it fresh attempts
 * (the general budget is per user when a valid token comes along), and per target
 * account, so guesses spread over many addresses still meet a limit. A login counts
 * only when it fails, and one that carries a device token of its account is budgeted
 * per device instead, so strangers who spend the account's budget do not lock its owner
 * out (docs/decisions/login-lockout.md).
 */
async function credentialLimitsPlugin(app: FastifyInstance, options: CredentialLimitOptions) {
  const attempts = createAttemptBudgets(options)

  const guardOf = (guard: Guard) => async (request: GuardedRequest, reply: FastifyReply) => {
    const budgets = guard.budgets(request, options.deviceTokens)
    const taking = await attempts.take(budgets)
    if (typeof taking === 'object') refuse(reply, taking.retryAfterSeconds)
    if (taking === 'taken' && guard.failure !== undefined) {
      request[TAKEN] = { budgets, failure: guard.failure }
    }
  }
  const countFailureOnly = async (request: GuardedRequest, reply: FastifyReply) => {
    const taken = request[TAKEN]
    if (taken && reply.statusCode !== taken.failure) await attempts.giveBack(taken.budgets)
  }

  app.addHook('onRoute', (route) => {
    const guard = [route.method]
      .flat()
      .flatMap((method) => GUARDS[`${method} ${route.url}`] ?? [])[0]
    if (!guard) return
    // preValidation: the body is parsed by then (the account is in it), the bearer token
    // checked (on request), and the preHandler hooks of these routes are moved before
    // parsing (openapi-routes.ts).
    route.preValidation = [guardOf(guard), route.preValidation ?? []].flat() as never
    if (guard.failure !== undefined) {
      route.onResponse = [route.onResponse ?? [], countFailureOnly].flat() as never
    }
  })
}

/** Per device for a valid device token of the account; else per address and per account. */
function loginBudgets(request: FastifyRequest, deviceTokens: DeviceTokens): readonly string[] {
  const account = accountOf(request)
  if (account !== undefined) {
    const { deviceToken } = request.body as { deviceToken?: unknown }
    const device = deviceTokens.deviceOf(deviceToken, account)
    if (device !== undefined) return [`credentials:login:device:${device}`]
  }
  return budgetsOf('login', request)
}

const addressBudget = (operation: string, request: FastifyRequest) =>
  `credentials:${operation}:address:${request.ip}`

/** The attempt's address, and the account it names, if it names one. */
function budgetsOf(operation: string, request: FastifyRequest): readonly string[] {
  const address = addressBudget(operation, request)
  const account = accountOf(request)
  // No account named (a body the schema will refuse): the address budget is the one.
  return account === undefined
    ? [address]
    : [address, `credentials:${operation}:account:${account}`]
}

/** The account an attempt targets: its email, as accounts are unique regardless of case. */
function accountOf(request: FastifyRequest): string | undefined {
  const { email } = (request.body ?? {}) as { email?: unknown }
  return typeof email === 'string' ? email.toLowerCase() : undefined
}

function refuse(reply: FastifyReply, retryAfterSeconds: number): never {
  reply.header('retry-after', retryAfterSeconds)
  throw new AppError(
    'RATE_LIMITED',
    429,
    `Too many attempts on this operation: retry in ${retryAfterSeconds} s`,
  )
}

export const credentialLimits = fp(credentialLimitsPlugin, { name: 'credential-limits' })
