import { randomBytes } from 'node:crypto'
import envSchema from 'env-schema'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

const environmentSchema = {
  type: 'object',
  properties: {
    NODE_ENV: {
      type: 'string',
      enum: ['development', 'production', 'test'],
      default: 'development',
    },
    PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 3000 },
    HOST: { type: 'string', minLength: 1, default: '127.0.0.1' },
    DATA_DIR: { type: 'string', minLength: 1, default: './data' },
    DATABASE_URL: { type: 'string', pattern: '^postgres(ql)?://' },
    REDIS_URL: { type: 'string', pattern: '^rediss?://' },
    REDIS_KEY_PREFIX: { type: 'string', maxLength: 100, default: 'catalog:' },
    JWT_SECRET: { type: 'string', minLength: 32 },
    ACCESS_TOKEN_TTL: { type: 'integer', minimum: 1, default: 900 },
    REFRESH_TOKEN_TTL: { type: 'integer', minimum: 1, default: 30 * 24 * 3600 },
    ADMIN_EMAIL: { type: 'string', pattern: '^[^@\\s]+@[^@\\s]+$' },
    ADMIN_PASSWORD: { type: 'string', minLength: 8, maxLength: 128 },
    LOG_LEVEL: { type: 'string', enum: LOG_LEVELS, default: 'info' },
    RATE_LIMIT_MAX: { type: 'integer', minimum: 0, default: 600 },
    RATE_LIMIT_WINDOW: { type: 'integer', minimum: 1, default: 60_000 },
    MAINTENANCE_MODE: { type: 'boolean', default: false },
    WS_SOCKETS_PER_CALLER: { type: 'integer', minimum: 0, default: 50 },
  },
} as const

interface Environment {
  NODE_ENV: 'development' | 'production' | 'test'
  PORT: number
  HOST: string
  DATA_DIR: string
  DATABASE_URL?: string
  REDIS_URL?: string
  REDIS_KEY_PREFIX: string
  JWT_SECRET?: string
  ACCESS_TOKEN_TTL: number
  REFRESH_TOKEN_TTL: number
  ADMIN_EMAIL?: string
  ADMIN_PASSWORD?: string
  LOG_LEVEL: (typeof LOG_LEVELS)[number]
  RATE_LIMIT_MAX: number
  RATE_LIMIT_WINDOW: number
  MAINTENANCE_MODE: boolean
  WS_SOCKETS_PER_CALLER: number
}

export interface Config {
  port: number
  host: string
  dataDir: string
  databaseUrl: string | undefined
  /** Shared pub/sub and stores for many instances; without it all stays in this process. */
  redisUrl: string | undefined
  /** Put before every key stored in Redis, so deployments can share one. */
  redisKeyPrefix: string
  logLevel: Environment['LOG_LEVEL']
  /** Serves GraphiQL and detailed start-up hints. */
  development: boolean
  /** Requests per window and caller; undefined when RATE_LIMIT_MAX is 0. */
  rateLimit: { max: number; windowMs: number } | undefined
  /** Answer 503 to everything but the probes. */
  maintenanceMode: boolean
  /** Open GraphQL WebSockets per caller and instance; undefined when WS_SOCKETS_PER_CALLER is 0. */
  socketsPerCaller: number | undefined
  auth: {
    jwtSecret: string
    accessTokenTtlSeconds: number
    refreshTokenTtlSeconds: number
    /** The admin to create or update at start; otherwise one is made only if none exists. */
    admin: { email: string; password: string } | undefined
  }
  /** Things worth telling the operator at start, such as a generated secret. */
  warnings: string[]
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** Reads the environment once; an invalid one throws a ConfigError naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const values = parseEnvironment(env)
  const warnings: string[] = []
  if (!values.JWT_SECRET && values.NODE_ENV === 'production') {
    throw new ConfigError('Invalid configuration: JWT_SECRET is required when NODE_ENV=production')
  }
  if (!values.JWT_SECRET) {
    warnings.push(
      'JWT_SECRET is not set: tokens are signed with a random secret and die with this process',
    )
  }
  if (Boolean(values.ADMIN_EMAIL) !== Boolean(values.ADMIN_PASSWORD)) {
    throw new ConfigError('Invalid configuration: ADMIN_EMAIL and ADMIN_PASSWORD go together')
  }
  return {
    port: values.PORT,
    host: values.HOST,
    dataDir: values.DATA_DIR,
    databaseUrl: values.DATABASE_URL,
    redisUrl: values.REDIS_URL,
    redisKeyPrefix: values.REDIS_KEY_PREFIX,
    logLevel: values.LOG_LEVEL,
    development: values.NODE_ENV === 'development',
    rateLimit:
      values.RATE_LIMIT_MAX > 0
        ? { max: values.RATE_LIMIT_MAX, windowMs: values.RATE_LIMIT_WINDOW }
        : undefined,
    maintenanceMode: values.MAINTENANCE_MODE,
    socketsPerCaller: values.WS_SOCKETS_PER_CALLER || undefined,
    auth: {
      jwtSecret: values.JWT_SECRET ?? randomBytes(48).toString('base64url'),
      accessTokenTtlSeconds: values.ACCESS_TOKEN_TTL,
      refreshTokenTtlSeconds: values.REFRESH_TOKEN_TTL,
      admin:
        values.ADMIN_EMAIL && values.ADMIN_PASSWORD
          ? { email: values.ADMIN_EMAIL, password: values.ADMIN_PASSWORD }
          : undefined,
    },
    warnings,
  }
}

function parseEnvironment(env: NodeJS.ProcessEnv): Environment {
  // Empty variables count as unset, as a shell's `FOO= npm start` means.
  const data = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''))
  try {
    return envSchema<Environment>({ schema: structuredClone(environmentSchema), data, env: false })
  } catch (error) {
    const message = (error as Error).message.replaceAll('env/', '')
    throw new ConfigError(`Invalid configuration: ${message}`)
  }
}
