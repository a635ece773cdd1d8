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

const LOGIN = 'POST /auth/login'
const SIGN_UP = 'POST /users'

/** The login budgets an attempt took, given back unless it failed. */
const TAKEN = Symbol('login budgets taken')
type LoginRequest = FastifyRequest & { [TAKEN]?: readonly string[] }

/**
 * Budgets of their own for login and sign-up, beside the general one: per address, so
 * no token a guesser attaches buys it fresh attempts (the general budget is per user
 * when a valid token comes along), and per target account, so guesses spread over
 * many addresses still meet a limit. A login counts only when it fails, and one that
 * carries a device token of its account is budgeted per device instead, so strangers
 * who spend the account's budget do not lock its owner out
 * (docs/decisions/login-lockout.md).
 */
async function credentialLimitsPlugin(app: FastifyInstance, options: CredentialLimitOptions) {
  const attempts = createAttemptBudgets(options)

  // Every sign-up counts: each one that succeeds stores an account.
  const signUpGuard = async (request: FastifyRequest, reply: FastifyReply) => {
    const taking = await attempts.take(budgetsOf('sign-up', request))
    if (typeof taking === 'object') refuse(reply, taking.retryAfterSeconds)
  }
  const loginGuard = async (request: LoginRequest, reply: FastifyReply) => {
    const budgets = loginBudgets(request, options.deviceTokens)
    const taking = await attempts.take(budgets)
    if (typeof taking === 'object') refuse(reply, taking.retryAfterSeconds)
    if (taking === 'taken') request[TAKEN] = budgets
  }
  // Only a wrong email or password fails: a refused body or an outage is no guess.
  const countFailureOnly = async (request: LoginRequest, reply: FastifyReply) => {
    const taken = request[TAKEN]
    if (taken && reply.statusCode !== 401) await attempts.giveBack(taken)
  }

  app.addHook('onRoute', (route) => {
    const methods = [route.method].flat()
    const guarded = (operation: string) =>
      methods.some((method) => `${method} ${route.url}` === operation)
    // preValidation: the body is parsed by then (the account is in it), and the
    // preHandler hooks of these routes are moved before parsing (openapi-routes.ts).
    if (guarded(SIGN_UP))
      route.preValidation = [signUpGuard, route.preValidation ?? []].flat() as never
    if (guarded(LOGIN)) {
      route.preValidation = [loginGuard, route.preValidation ?? []].flat() as never
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

/** The attempt's address, and the account it names, if it names one. */
function budgetsOf(operation: 'login' | 'sign-up', request: FastifyRequest): readonly string[] {
  const address = `credentials:${operation}:address:${request.ip}`
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
