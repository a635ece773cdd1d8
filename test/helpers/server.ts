import type { AddressInfo } from 'node:net'
import { createSigner } from 'fast-jwt'
import { pino } from 'pino'
import { type AppDependencies, buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { users } from '../../src/db/schema.js'
import { createEventBus, type EventBus } from '../../src/platform/infrastructure/events.js'
import { type RedisConnections, redisFromConfig } from '../../src/platform/infrastructure/redis.js'
import { type Api, createApi } from './api.js'
import type { Backend, OpenSettings, TestDatabase } from './backends.js'

export const ADMIN = { email: 'admin@example.com', password: 'admin-password-1' }

export const testEnvironment = {
  NODE_ENV: 'test',
  LOG_LEVEL: 'silent',
  JWT_SECRET: 'a-test-secret-that-is-long-enough-for-hs256',
  ADMIN_EMAIL: ADMIN.email,
  ADMIN_PASSWORD: ADMIN.password,
  // Every request of a suite comes from one address; the limiter has a suite of its own.
  RATE_LIMIT_MAX: '0',
  // A thirty-second of the service's scrypt cost: sign-ups and logins were most of the
  // suites' CPU (graphql-orders and auth: 131 s of CPU, 52 s with this).
  PASSWORD_HASH_COST: '10',
}

export interface TestServer {
  baseUrl: string
  api: Api
  app: Awaited<ReturnType<typeof buildApp>>
  testDatabase: TestDatabase
  events: EventBus
  redis: RedisConnections | undefined
  close(): Promise<void>
}

export interface StartOptions {
  logger?: AppDependencies['logger']
  /** Another server's database, for several instances over one database; not dropped here. */
  testDatabase?: TestDatabase
  /** The domains to serve instead of the service's own. */
  modules?: AppDependencies['modules']
  /** Told of every statement drizzle sends on the fresh database (ignored with testDatabase). */
  databaseLogger?: OpenSettings['logger']
  /** How webhook targets' names resolve, instead of the system's resolver. */
  resolveHost?: AppDependencies['resolveHost']
}

/**
 * A real server on a real port over a fresh database of the given backend; pub/sub is
 * in-process unless the environment names a Redis (REDIS_URL or REDIS_SENTINELS).
 */
export async function startServer(
  backend: Backend,
  environment: Record<string, string> = {},
  options: StartOptions = {},
): Promise<TestServer> {
  const testDatabase =
    options.testDatabase ?? (await backend.open({ logger: options.databaseLogger }))
  const config = loadConfig({
    ...testEnvironment,
    REDIS_KEY_PREFIX: testDatabase.redisKeyPrefix,
    ...environment,
  })
  const logger = options.logger ?? false
  const log = pino({ level: 'silent' })
  const redis = redisFromConfig(config, log)
  const events = createEventBus({ redis, log })
  const app = await buildApp(
    {
      database: testDatabase.database,
      events,
      redis,
      logger,
      modules: options.modules,
      ...(options.resolveHost && { resolveHost: options.resolveHost }),
    },
    config,
  )
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const baseUrl = `http://127.0.0.1:${port}`
  return {
    baseUrl,
    api: createApi(baseUrl),
    app,
    testDatabase,
    events,
    redis,
    async close() {
      await app.close()
      await events.close()
      await redis?.close()
      if (!options.testDatabase) await testDatabase.drop()
    },
  }
}

export async function login(api: Api, credentials: { email: string; password: string }) {
  const response = await api.post('/auth/login', { json: credentials })
  if (response.status !== 200) throw new Error(`login failed: ${response.text}`)
  return response.body.data as { accessToken: string; refreshToken: string }
}

let userCount = 0

/** Signs up a fresh `user` and logs in. */
export async function newUser(api: Api) {
  userCount += 1
  const credentials = {
    email: `user${userCount}-${Date.now()}@example.com`,
    password: 'user-password-1',
  }
  const created = await api.post('/users', { json: { name: `User ${userCount}`, ...credentials } })
  if (created.status !== 201) throw new Error(`sign-up failed: ${created.text}`)
  return { user: created.body.data, ...credentials, ...(await login(api, credentials)) }
}

let tokenUserId = 1_000_000

/**
 * A token of an account stored directly: a caller with budgets of its own, without a
 * sign-up (which would draw on the address's budget). Tokens of accounts that do not
 * exist are refused.
 */
export async function freshAccount(server: TestServer, role: 'user' | 'admin' = 'user') {
  tokenUserId += 1
  const [account] = await server.testDatabase.database.db
    .insert(users)
    .values({
      name: `Account ${tokenUserId}`,
      email: `account-${tokenUserId}-${Date.now()}@example.com`,
      passwordHash: 'never logs in',
      role,
    })
    .returning()
  if (!account) throw new Error('INSERT … RETURNING gave no row')
  return { account, accessToken: accessTokenFor(account.id, role) }
}

function accessTokenFor(userId: number, role: 'user' | 'admin') {
  // As long as the server's own (ACCESS_TOKEN_TTL): one without an expiry, or longer, is refused.
  const sign = createSigner({
    key: testEnvironment.JWT_SECRET,
    algorithm: 'HS256',
    expiresIn: 900_000,
  })
  return sign({ sub: String(userId), role })
}
