import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { type AccessTokens, bearerTokenOf } from './access-tokens.js'
import { AppError } from './errors.js'
import { isProbe } from './probes.js'
import type { RedisConnections } from './redis.js'

export interface RateLimitOptions {
  max: number
  windowMs: number
  accessTokens: AccessTokens
  /** With Redis the budgets are counted there, so every instance draws on the same one. */
  redis: RedisConnections | undefined
}

/**
 * Per user when the bearer token is valid, per IP otherwise; RateLimit-* headers. While
 * Redis is away requests are let through uncounted: an outage of the counter store must
 * not take the whole API down with it.
 */
async function rateLimitPlugin(app: FastifyInstance, options: RateLimitOptions) {
  const callerOf = (request: FastifyRequest) => {
    const token = bearerTokenOf(request.headers.authorization)
    if (token) {
      try {
        return `user:${options.accessTokens.verify(token).userId}`
      } catch {
        // An invalid token is counted against the address that sent it.
      }
    }
    return `ip:${request.ip}`
  }

  await app.register(rateLimit, {
    max: options.max,
    timeWindow: options.windowMs,
    keyGenerator: callerOf,
    allowList: (request) => isProbe(request.url),
    enableDraftSpec: true,
    ...(options.redis && {
      redis: options.redis.commands,
      nameSpace: 'rate-limit:',
      skipOnError: true,
    }),
    errorResponseBuilder: (_request, context) =>
      new AppError('RATE_LIMITED', 429, `Too many requests: retry in ${context.after}`),
  })
}

export const rateLimits = fp(rateLimitPlugin, { name: 'rate-limits' })
