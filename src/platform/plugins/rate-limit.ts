import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../errors.js'
import {
  type AccessTokens,
  bearerTokenOf,
  type Principal,
} from '../infrastructure/access-tokens.js'
import type { RedisConnections } from '../infrastructure/redis.js'
import { isProbe } from './probes.js'

export interface RateLimitOptions {
  max: number
  windowMs: number
  accessTokens: AccessTokens
  /** With Redis the budgets are counted there, so every instance draws on the same one. */
  redis: RedisConnections | undefined
}

/** Whose budget a request or an operation draws on: the user's when known, else the address's. */
export const callerKey = (principal: Principal | null, ip: string) =>
  principal ? `user:${principal.userId}` : `ip:${ip}`

/** The caller of a request: the user its bearer token proves, else its address. */
export function requestCaller(request: FastifyRequest, accessTokens: AccessTokens): string {
  const token = bearerTokenOf(request.headers.authorization)
  if (token) {
    try {
      return callerKey(accessTokens.verify(token), request.ip)
    } catch {
      // An invalid token is counted against the address that sent it.
    }
  }
  return callerKey(null, request.ip)
}

/** A refused operation: how long until its caller's window resets. */
export interface OverBudget {
  retryAfterSeconds: number
}

/**
 * Draws one operation sent over a WebSocket from its caller's budget, the one HTTP
 * requests draw on: the socket's upgrade request, and the caller it proved since.
 */
export type OperationBudget = (
  upgrade: FastifyRequest,
  caller: string,
) => Promise<OverBudget | undefined>

declare module 'fastify' {
  interface FastifyInstance {
    /** Present while rate limits are on (RATE_LIMIT_MAX > 0). */
    operationBudget?: OperationBudget
  }
}

/** The caller an operation over a WebSocket is counted for, set on its upgrade request. */
const OPERATION_CALLER = Symbol('operation caller')
type OperationRequest = FastifyRequest & { [OPERATION_CALLER]?: string }

/**
 * Per user when the bearer token is valid, per IP otherwise; RateLimit-* headers. While
 * Redis is away or slow requests are let through uncounted: an outage of the counter
 * store must not take the whole API down with it, nor make every request wait on it.
 */
async function rateLimitPlugin(app: FastifyInstance, options: RateLimitOptions) {
  const callerOf = (request: OperationRequest) =>
    request[OPERATION_CALLER] || requestCaller(request, options.accessTokens)

  const { redis } = options
  const redisUnfit = redis ? () => !redis.answersInTime() : () => false
  await app.register(rateLimit, {
    max: options.max,
    timeWindow: options.windowMs,
    keyGenerator: callerOf,
    // A Redis away or slow (redis.ts) is not asked: the request goes on uncounted at once.
    allowList: (request) => isProbe(request.url) || redisUnfit(),
    enableDraftSpec: true,
    ...(redis && {
      redis: redis.commands,
      nameSpace: 'rate-limit:',
      skipOnError: true,
    }),
    errorResponseBuilder: (_request, context) =>
      new AppError('RATE_LIMITED', 429, `Too many requests: retry in ${context.after}`),
  })

  // The limiter's own checker, on its own store: one budget whatever the transport.
  const check = app.createRateLimit()
  const draw = async (upgrade: FastifyRequest, caller: string) => {
    // The upgrade request as the checker reads it (route, address), counted for `caller`.
    const request: OperationRequest = Object.create(upgrade)
    request[OPERATION_CALLER] = caller
    const verdict = await check(request)
    if (verdict.isAllowed || !verdict.isExceeded) return undefined
    return { retryAfterSeconds: verdict.ttlInSeconds }
  }
  // One caller's draws go one after the other. The in-process store answers a check with
  // its live record, read after an await: checks started in one tick (a socket's frames
  // arrive in bursts) would all read the last count and all be refused.
  const drawing = new Map<string, Promise<unknown>>()
  app.decorate('operationBudget', (upgrade: FastifyRequest, caller: string) => {
    const drawn = (drawing.get(caller) ?? Promise.resolve()).then(() => draw(upgrade, caller))
    const settled = drawn.catch(() => {})
    drawing.set(caller, settled)
    void settled.then(() => {
      if (drawing.get(caller) === settled) drawing.delete(caller)
    })
    return drawn
  })
}

export const rateLimits = fp(rateLimitPlugin, { name: 'rate-limits' })
