import type { AddressInfo } from 'node:net'
import { pino } from 'pino'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import type { DatabaseHandle } from '../src/db/database.js'
import { createEventBus, type EventBus } from '../src/platform/infrastructure/events.js'
import { redisFromConfig } from '../src/platform/infrastructure/redis.js'

export const BENCH_ADMIN = { email: 'bench@example.com', password: 'bench-password-1' }

const environment = {
  NODE_ENV: 'production',
  LOG_LEVEL: 'silent',
  JWT_SECRET: 'bench-secret-bench-secret-bench-secret',
  ADMIN_EMAIL: BENCH_ADMIN.email,
  ADMIN_PASSWORD: BENCH_ADMIN.password,
  // The budgets are off, as in the peer benchmark; every client here is one address.
  RATE_LIMIT_MAX: '0',
  ...(process.env.REDIS_URL && { REDIS_URL: process.env.REDIS_URL }),
}

const log = pino({ level: 'silent' })

/**
 * Instances of the service over one database, on ports of their own: through Redis when
 * REDIS_URL is set, else on one in-process bus, as one process can.
 */
export function benchInstances(database: DatabaseHandle) {
  const sharedBus: EventBus | undefined = process.env.REDIS_URL
    ? undefined
    : createEventBus({ log })
  return async function startInstance(overrides: Record<string, string> = {}) {
    const config = loadConfig({ ...environment, ...overrides })
    const redis = redisFromConfig(config, log)
    const events = sharedBus ?? createEventBus({ redis, log })
    const app = await buildApp({ database, events, redis, loggerInstance: log }, config)
    await app.listen({ port: 0, host: '127.0.0.1' })
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
    return { app, events, redis, url }
  }
}
