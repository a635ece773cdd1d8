import { randomBytes } from 'node:crypto'
import { isIP } from 'node:net'
import envSchema from 'env-schema'
import { refusals } from './config-errors.js'
import { readTrustedDocuments, type TrustedDocuments } from './graphql/trusted-documents.js'
import { V1_DEPRECATED_AT } from './http/version-negotiation.js'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
const LOG_FORMATS = ['pretty', 'json'] as const
// scrypt with N=2^15 and r=8: 32 MiB per hash, and CPU to match. OWASP's floor is
// 2^17 (128 MiB); 2^15 keeps a burst of logins within memory while staying well above
// what offline cracking finds cheap. Lower costs only make test suites faster.
const DEFAULT_PASSWORD_HASH_COST = 15
/** The highest PASSWORD_HASH_COST, and so the most memory a stored hash may ask of scrypt. */
export const MAX_PASSWORD_HASH_COST = 17
const DEFAULT_WEBHOOK_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h'
/**
 * The drain and the close's own 10 s stay within 30 s, Kubernetes' default grace before
 * it kills the process, cleanup or not.
 */
const MAX_SHUTDOWN_DRAIN_MS = 20_000

/** An integer counting `unit`s (the words of its error name them; see config-errors.ts). */
const integer = <Bounds extends object>(unit: string, bounds: Bounds) =>
  ({ type: 'integer', description: unit, ...bounds }) as const

/**
 * Each variable's type and bounds, which also say in words what it takes when a value
 * is refused (config-errors.ts): a string's `description` says it whole (what its
 * pattern means), an integer's names its unit.
 */
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
    DATABASE_URL: {
      type: 'string',
      pattern: '^postgres(ql)?://',
      description:
        'a postgres:// or postgresql:// URL, such as postgres://user:password@db.internal:5432/catalog',
    },
    DATABASE_TIMEOUT: integer('milliseconds', { minimum: 100, maximum: 600_000, default: 5000 }),
    // Checked against DATABASE_URL in replicaOf, with messages that say what it takes.
    DATABASE_REPLICA_URL: {
      type: 'string',
      pattern: '^postgres(ql)?://',
      description:
        'a postgres:// or postgresql:// URL of a streaming replica of DATABASE_URL, such as postgres://reader@db-replica.internal:5432/catalog',
    },
    REPLICA_MAX_LAG_MS: integer('milliseconds', {
      minimum: 100,
      maximum: 3_600_000,
      default: 1000,
    }),
    REDIS_URL: {
      type: 'string',
      pattern: '^rediss?://',
      description: 'a redis:// or rediss:// URL, such as redis://cache.internal:6379',
    },
    // Parsed and checked in redisTargetOf, with messages that say what they take.
    REDIS_SENTINELS: { type: 'string' },
    REDIS_SENTINEL_NAME: { type: 'string', maxLength: 200 },
    REDIS_KEY_PREFIX: { type: 'string', maxLength: 100, default: 'catalog:' },
    REDIS_TIMEOUT_MS: integer('milliseconds', { minimum: 1, maximum: 60_000, default: 100 }),
    JWT_SECRET: { type: 'string', minLength: 32 },
    // Its length is checked in loadConfig, with a message that says what it takes.
    DATA_ENCRYPTION_KEY: { type: 'string' },
    ACCESS_TOKEN_TTL: integer('seconds', { minimum: 1, default: 900 }),
    REFRESH_TOKEN_TTL: integer('seconds', { minimum: 1, default: 30 * 24 * 3600 }),
    DEVICE_TOKEN_TTL: integer('seconds', { minimum: 1, default: 90 * 24 * 3600 }),
    ADMIN_EMAIL: {
      type: 'string',
      pattern: '^[^@\\s]+@[^@\\s]+$',
      description: 'an email address, such as admin@example.com',
    },
    ADMIN_PASSWORD: { type: 'string', minLength: 8, maxLength: 128 },
    PASSWORD_HASH_COST: {
      type: 'integer',
      minimum: 10,
      maximum: MAX_PASSWORD_HASH_COST,
      default: DEFAULT_PASSWORD_HASH_COST,
    },
    LOG_LEVEL: { type: 'string', enum: LOG_LEVELS, default: 'info' },
    LOG_FORMAT: { type: 'string', enum: LOG_FORMATS },
    RATE_LIMIT_MAX: integer('requests', { minimum: 0, default: 600 }),
    RATE_LIMIT_WINDOW: integer('milliseconds', { minimum: 1, default: 60_000 }),
    AUTH_RATE_LIMIT_MAX: integer('attempts', { minimum: 1, default: 30 }),
    MAINTENANCE_MODE: { type: 'boolean', default: false },
    API_DOCS: { type: 'boolean', default: true },
    GRAPHQL_INTROSPECTION: { type: 'boolean', default: true },
    GRAPHQL_TRUSTED_DOCUMENTS: { type: 'string' },
    TRUST_PROXY: { type: 'string' },
    CORS_ORIGINS: { type: 'string' },
    REQUEST_TIMEOUT: integer('milliseconds', { minimum: 0, default: 120_000 }),
    CONNECTION_TIMEOUT: integer('milliseconds', { minimum: 0, default: 60_000 }),
    KEEP_ALIVE_TIMEOUT: integer('milliseconds', { minimum: 1, default: 72_000 }),
    SHUTDOWN_DRAIN_MS: integer('milliseconds', {
      minimum: 0,
      maximum: MAX_SHUTDOWN_DRAIN_MS,
      default: 0,
    }),
    WS_SOCKETS_PER_CALLER: integer('sockets', { minimum: 0, default: 50 }),
    CACHE_TTL_SECONDS: integer('seconds', { minimum: 0, maximum: 3600, default: 5 }),
    WEBHOOK_SECRET: { type: 'string', minLength: 16, maxLength: 512 },
    PRESENCE_TIMEOUT_MS: integer('milliseconds', {
      minimum: 1000,
      maximum: 600_000,
      default: 30_000,
    }),
    METRICS_INTERVAL_MS: integer('milliseconds', {
      minimum: 100,
      maximum: 3_600_000,
      default: 5000,
    }),
    METRICS_TOKEN: { type: 'string', minLength: 16, maxLength: 512 },
    // Its form is checked in sunsetOf, with a message that says what it takes.
    V1_SUNSET: { type: 'string' },
    V1_MIGRATION_URL: { type: 'string', minLength: 1, maxLength: 2048, default: '/docs/v2' },
    SMTP_URL: {
      type: 'string',
      pattern: '^smtps?://',
      description: 'an smtp:// or smtps:// URL, such as smtps://user:password@mail.example.com:465',
    },
    EMAIL_FROM: {
      type: 'string',
      pattern: '^[^@\\s]+@[^@\\s]+$',
      description: 'an email address, such as shop@example.com',
      default: 'no-reply@localhost',
    },
    EMAIL_POLL_INTERVAL_MS: integer('milliseconds', {
      minimum: 10,
      maximum: 3_600_000,
      default: 1000,
    }),
    EMAIL_RETRY_BASE_MS: integer('milliseconds', {
      minimum: 10,
      maximum: 3_600_000,
      default: 2000,
    }),
    EMAIL_MAX_ATTEMPTS: integer('attempts', { minimum: 1, maximum: 20, default: 5 }),
    PASSWORD_RESET_URL: { type: 'string', default: 'http://127.0.0.1:3000/reset-password' },
    PASSWORD_RESET_TTL: integer('seconds', { minimum: 60, maximum: 86_400, default: 1800 }),
    EMAIL_VERIFY_URL: { type: 'string', default: 'http://127.0.0.1:3000/verify-email' },
    EMAIL_VERIFY_TTL: integer('seconds', { minimum: 60, maximum: 2_592_000, default: 86_400 }),
    UPLOAD_MAX_BYTES: integer('bytes', { minimum: 1, maximum: 1_073_741_824, default: 10_485_760 }),
    // A pebibyte at most: byte counts stay exact integers in JavaScript far above it.
    UPLOAD_QUOTA_BYTES: integer('bytes', {
      minimum: 0,
      maximum: 1_125_899_906_842_624,
      default: 1_073_741_824,
    }),
    // Outgoing webhooks: the schedule is parsed in webhooksOf, with a message in words.
    WEBHOOK_RETRY_SCHEDULE: { type: 'string', default: DEFAULT_WEBHOOK_RETRY_SCHEDULE },
    WEBHOOK_ALLOW_PRIVATE_TARGETS: { type: 'boolean', default: false },
    WEBHOOK_CONCURRENCY: integer('requests in flight', { minimum: 0, maximum: 1000, default: 10 }),
    // OpenTelemetry's own names; the SDK reads them (and the other OTEL_* variables) itself.
    OTEL_EXPORTER_OTLP_ENDPOINT: { type: 'string' },
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: { type: 'string' },
    OTEL_EXPORTER_OTLP_PROTOCOL: { type: 'string' },
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: { type: 'string' },
    OTEL_SDK_DISABLED: { type: 'string' },
  },
} as const

interface Environment {
  NODE_ENV: 'development' | 'production' | 'test'
  PORT: number
  HOST: string
  DATA_DIR: string
  DATABASE_URL?: string
  DATABASE_TIMEOUT: number
  DATABASE_REPLICA_URL?: string
  REPLICA_MAX_LAG_MS: number
  REDIS_URL?: string
  REDIS_SENTINELS?: string
  REDIS_SENTINEL_NAME?: string
  REDIS_KEY_PREFIX: string
  REDIS_TIMEOUT_MS: number
  JWT_SECRET?: string
  DATA_ENCRYPTION_KEY?: string
  ACCESS_TOKEN_TTL: number
  REFRESH_TOKEN_TTL: number
  DEVICE_TOKEN_TTL: number
  ADMIN_EMAIL?: string
  ADMIN_PASSWORD?: string
  PASSWORD_HASH_COST: number
  LOG_LEVEL: (typeof LOG_LEVELS)[number]
  LOG_FORMAT?: (typeof LOG_FORMATS)[number]
  RATE_LIMIT_MAX: number
  RATE_LIMIT_WINDOW: number
  AUTH_RATE_LIMIT_MAX: number
  MAINTENANCE_MODE: boolean
  API_DOCS: boolean
  GRAPHQL_INTROSPECTION: boolean
  GRAPHQL_TRUSTED_DOCUMENTS?: string
  TRUST_PROXY?: string
  CORS_ORIGINS?: string
  REQUEST_TIMEOUT: number
  CONNECTION_TIMEOUT: number
  KEEP_ALIVE_TIMEOUT: number
  SHUTDOWN_DRAIN_MS: number
  WS_SOCKETS_PER_CALLER: number
  CACHE_TTL_SECONDS: number
  WEBHOOK_SECRET?: string
  PRESENCE_TIMEOUT_MS: number
  METRICS_INTERVAL_MS: number
  METRICS_TOKEN?: string
  V1_SUNSET?: string
  V1_MIGRATION_URL: string
  SMTP_URL?: string
  EMAIL_FROM: string
  EMAIL_POLL_INTERVAL_MS: number
  EMAIL_RETRY_BASE_MS: number
  EMAIL_MAX_ATTEMPTS: number
  PASSWORD_RESET_URL: string
  PASSWORD_RESET_TTL: number
  EMAIL_VERIFY_URL: string
  EMAIL_VERIFY_TTL: number
  UPLOAD_MAX_BYTES: number
  UPLOAD_QUOTA_BYTES: number
  WEBHOOK_RETRY_SCHEDULE: string
  WEBHOOK_ALLOW_PRIVATE_TARGETS: boolean
  WEBHOOK_CONCURRENCY: number
  OTEL_EXPORTER_OTLP_ENDPOINT?: string
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string
  OTEL_EXPORTER_OTLP_PROTOCOL?: string
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?: string
  OTEL_SDK_DISABLED?: string
}

export interface Config {
  port: number
  host: string
  dataDir: string
  databaseUrl: string | undefined
  /**
   * The longest a statement may run, and the longest the service waits for a connection
   * or an answer before telling the client 503 (Postgres only).
   */
  databaseTimeoutMs: number
  /**
   * A streaming replica of the Postgres primary that serves the catalog's public reads
   * while it lags less than `maxLagMs`, and that a caller who wrote in the last
   * `maxLagMs` does not read from.
   */
  replica: ReplicaTarget | undefined
  /**
   * Shared pub/sub and stores for many instances, on one Redis or on the primary that
   * Sentinel names; without it all stays in this process.
   */
  redis: RedisTarget | undefined
  /** Put before every key stored in Redis, so deployments can share one. */
  redisKeyPrefix: string
  /** The longest a request waits on one Redis command; past it, it goes on without Redis. */
  redisTimeoutMs: number
  logLevel: Environment['LOG_LEVEL']
  /** Coloured lines for a person at a terminal, or JSON lines for a log collector. */
  logFormat: (typeof LOG_FORMATS)[number]
  /** Serves GraphiQL and detailed start-up hints. */
  development: boolean
  /**
   * Requests per window and caller, and login or sign-up attempts per window, address
   * and account; undefined when RATE_LIMIT_MAX is 0.
   */
  rateLimit: { max: number; windowMs: number; credentialsMax: number } | undefined
  /** Answer 503 to everything but the probes. */
  maintenanceMode: boolean
  /** Serves Swagger UI and openapi.yaml at /docs. */
  apiDocs: boolean
  /** Answers GraphQL introspection (`__schema`, `__type`), over HTTP and WebSocket. */
  graphqlIntrospection: boolean
  /** The exact origins whose pages may call the API from a browser; empty: none. */
  corsOrigins: readonly string[]
  /** GRAPHQL_TRUSTED_DOCUMENTS's manifest: only its documents run, and APQ registers none. */
  trustedDocuments: TrustedDocuments | undefined
  /** Options of the HTTP server, in Fastify's terms. */
  server: {
    /** The peers believed when X-Forwarded-For names the client: all, none or these. */
    trustProxy: boolean | string[]
    /** Milliseconds to receive a whole request, headers and body; 0: no limit. */
    requestTimeoutMs: number
    /** How often Node looks for requests past that limit. */
    timeoutCheckIntervalMs: number
    /** Milliseconds a socket may stay silent, but for idling between requests; 0: no limit. */
    connectionTimeoutMs: number
    /** Milliseconds an idle connection is kept open for the client's next request. */
    keepAliveTimeoutMs: number
  }
  /**
   * Milliseconds between a SIGTERM and the close, while /ready fails and all else is
   * served, for the load balancer's health check to take the instance out first.
   */
  shutdownDrainMs: number
  /** Open GraphQL WebSockets per caller and instance; undefined when it or RATE_LIMIT_MAX is 0. */
  socketsPerCaller: number | undefined
  /**
   * Seconds a cached read of the catalog lives, and public reads may be kept by a client
   * or proxy (Cache-Control); 0 turns the cache off.
   */
  readCacheTtlSeconds: number
  /** The key payment providers sign their webhooks with; without it none is accepted. */
  webhookSecret: string | undefined
  /**
   * With Redis, the longest the users of an instance that died without closing stay
   * online: the survivors publish them offline within this many milliseconds.
   */
  presenceTimeoutMs: number
  /** How often each instance publishes its figures on `metricsUpdated`. */
  metricsIntervalMs: number
  /** A bearer token for scrapers of GET /metrics, besides an admin's access token. */
  metricsToken: string | undefined
  /**
   * When v1 of the REST API stops being served, and where its clients read how to move
   * to v2: with a sunset, v1 answers say both (Deprecation, Sunset and Link headers).
   */
  v1Sunset: { at: Date; migrationUrl: string } | undefined
  /** The largest file POST /upload stores; a larger one is refused with 413. */
  uploadMaxBytes: number
  /** The bytes the files of one user may take in all; admins have no quota. */
  uploadQuotaBytes: number
  /**
   * Outgoing webhooks: the delays between attempts of one delivery (attempts = 1 + their
   * number); whether targets may be loopback, private or other non-public addresses; and
   * how many deliveries this instance has in flight at most (0: it sends none).
   */
  webhooks: { retryScheduleMs: number[]; allowPrivateTargets: boolean; concurrency: number }
  /**
   * Emails go out through SMTP_URL, or to the log without it; the outbox is polled every
   * `pollIntervalMs`, a refused email retried after `retryBaseMs`, doubling, up to
   * `maxAttempts` attempts.
   */
  emails: {
    smtpUrl: string | undefined
    from: string
    pollIntervalMs: number
    retryBaseMs: number
    maxAttempts: number
  }
  /**
   * The root of the keys that seal secrets stored in the database (secret-box.ts):
   * DATA_ENCRYPTION_KEY, or JWT_SECRET without it.
   */
  dataEncryptionKey: string
  /**
   * The links the account emails hold: `<url>?token=<token>`, the page of the client app
   * that posts the token back, valid `ttlSeconds`.
   */
  accountEmails: {
    passwordReset: { url: string; ttlSeconds: number }
    emailVerification: { url: string; ttlSeconds: number }
  }
  auth: {
    jwtSecret: string
    accessTokenTtlSeconds: number
    refreshTokenTtlSeconds: number
    /** How long a device token lets its client's logins be budgeted apart from strangers'. */
    deviceTokenTtlSeconds: number
    /** The admin to create or update at start; otherwise one is made only if none exists. */
    admin: { email: string; password: string } | undefined
    /** log2 of scrypt's N for new password hashes; a stored hash keeps its own. */
    passwordHashCost: number
  }
  /**
   * OpenTelemetry traces, on when an OTLP endpoint is set (and OTEL_SDK_DISABLED is not
   * true): the encoding they are exported in. The SDK reads the endpoint, headers,
   * service name and sampler from the environment itself.
   */
  tracing: { protocol: TracesProtocol } | undefined
  /** Things worth telling the operator at start, such as a generated secret. */
  warnings: string[]
}

/** DATABASE_REPLICA_URL and REPLICA_MAX_LAG_MS. */
export interface ReplicaTarget {
  url: string
  maxLagMs: number
}

/** REDIS_URL's one Redis, or REDIS_SENTINELS's Sentinels and the primary they watch. */
export type RedisTarget =
  | { url: string }
  | { sentinels: { host: string; port: number }[]; name: string }

const TRACES_PROTOCOLS = ['http/protobuf', 'http/json'] as const
export type TracesProtocol = (typeof TRACES_PROTOCOLS)[number]

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** Reads the environment once; an invalid one throws a ConfigError naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const values = parseEnvironment(env)
  const warnings: string[] = []
  if (!values.JWT_SECRET && values.NODE_ENV === 'production') {
    throw new ConfigError(
      'Invalid configuration: JWT_SECRET is required when NODE_ENV=production: a secret of at least 32 characters, such as the output of `openssl rand -base64 48`',
    )
  }
  if (!values.JWT_SECRET) {
    warnings.push(
      'JWT_SECRET is not set: tokens are signed with a random secret and die with this process (and so do two-factor secrets, unless DATA_ENCRYPTION_KEY is set)',
    )
  }
  if (values.DATA_ENCRYPTION_KEY !== undefined && values.DATA_ENCRYPTION_KEY.length < 32) {
    throw new ConfigError(
      'Invalid configuration: DATA_ENCRYPTION_KEY must be a secret of at least 32 characters, such as the output of `openssl rand -base64 48`',
    )
  }
  if (values.PASSWORD_HASH_COST < DEFAULT_PASSWORD_HASH_COST && values.NODE_ENV === 'production') {
    throw new ConfigError(
      `Invalid configuration: PASSWORD_HASH_COST must be from ${DEFAULT_PASSWORD_HASH_COST} to ${MAX_PASSWORD_HASH_COST} when NODE_ENV=production; lower costs are for tests`,
    )
  }
  if (Boolean(values.ADMIN_EMAIL) !== Boolean(values.ADMIN_PASSWORD)) {
    throw new ConfigError(
      "Invalid configuration: ADMIN_EMAIL and ADMIN_PASSWORD are set together, an admin's email and password, or neither is",
    )
  }
  const jwtSecret = values.JWT_SECRET ?? randomBytes(48).toString('base64url')
  return {
    port: values.PORT,
    host: values.HOST,
    dataDir: values.DATA_DIR,
    databaseUrl: values.DATABASE_URL,
    databaseTimeoutMs: values.DATABASE_TIMEOUT,
    replica: replicaOf(values),
    redis: redisTargetOf(values),
    redisKeyPrefix: values.REDIS_KEY_PREFIX,
    redisTimeoutMs: values.REDIS_TIMEOUT_MS,
    logLevel: values.LOG_LEVEL,
    logFormat: values.LOG_FORMAT ?? (values.NODE_ENV === 'development' ? 'pretty' : 'json'),
    development: values.NODE_ENV === 'development',
    rateLimit:
      values.RATE_LIMIT_MAX > 0
        ? {
            max: values.RATE_LIMIT_MAX,
            windowMs: values.RATE_LIMIT_WINDOW,
            credentialsMax: values.AUTH_RATE_LIMIT_MAX,
          }
        : undefined,
    maintenanceMode: values.MAINTENANCE_MODE,
    apiDocs: values.API_DOCS,
    graphqlIntrospection: values.GRAPHQL_INTROSPECTION,
    corsOrigins: parseOrigins(values.CORS_ORIGINS),
    trustedDocuments: trustedDocumentsOf(values.GRAPHQL_TRUSTED_DOCUMENTS),
    server: {
      trustProxy: parseTrustProxy(values.TRUST_PROXY),
      requestTimeoutMs: values.REQUEST_TIMEOUT,
      timeoutCheckIntervalMs: timeoutCheckInterval(values.REQUEST_TIMEOUT),
      connectionTimeoutMs: values.CONNECTION_TIMEOUT,
      keepAliveTimeoutMs: values.KEEP_ALIVE_TIMEOUT,
    },
    shutdownDrainMs: values.SHUTDOWN_DRAIN_MS,
    // A per-caller budget like the rate limit's, and off with it (a load test from one address).
    socketsPerCaller:
      values.RATE_LIMIT_MAX === 0 ? undefined : values.WS_SOCKETS_PER_CALLER || undefined,
    readCacheTtlSeconds: values.CACHE_TTL_SECONDS,
    webhookSecret: values.WEBHOOK_SECRET,
    presenceTimeoutMs: values.PRESENCE_TIMEOUT_MS,
    metricsIntervalMs: values.METRICS_INTERVAL_MS,
    metricsToken: values.METRICS_TOKEN,
    v1Sunset: values.V1_SUNSET
      ? { at: sunsetOf(values.V1_SUNSET), migrationUrl: values.V1_MIGRATION_URL }
      : undefined,
    uploadMaxBytes: values.UPLOAD_MAX_BYTES,
    uploadQuotaBytes: values.UPLOAD_QUOTA_BYTES,
    webhooks: {
      retryScheduleMs: retryScheduleOf(values.WEBHOOK_RETRY_SCHEDULE),
      allowPrivateTargets: values.WEBHOOK_ALLOW_PRIVATE_TARGETS,
      concurrency: values.WEBHOOK_CONCURRENCY,
    },
    emails: {
      smtpUrl: values.SMTP_URL,
      from: values.EMAIL_FROM,
      pollIntervalMs: values.EMAIL_POLL_INTERVAL_MS,
      retryBaseMs: values.EMAIL_RETRY_BASE_MS,
      maxAttempts: values.EMAIL_MAX_ATTEMPTS,
    },
    dataEncryptionKey: values.DATA_ENCRYPTION_KEY ?? jwtSecret,
    accountEmails: {
      passwordReset: {
        url: linkBaseOf('PASSWORD_RESET_URL', values.PASSWORD_RESET_URL),
        ttlSeconds: values.PASSWORD_RESET_TTL,
      },
      emailVerification: {
        url: linkBaseOf('EMAIL_VERIFY_URL', values.EMAIL_VERIFY_URL),
        ttlSeconds: values.EMAIL_VERIFY_TTL,
      },
    },
    auth: {
      jwtSecret,
      accessTokenTtlSeconds: values.ACCESS_TOKEN_TTL,
      refreshTokenTtlSeconds: values.REFRESH_TOKEN_TTL,
      deviceTokenTtlSeconds: values.DEVICE_TOKEN_TTL,
      admin:
        values.ADMIN_EMAIL && values.ADMIN_PASSWORD
          ? { email: values.ADMIN_EMAIL, password: values.ADMIN_PASSWORD }
          : undefined,
      passwordHashCost: values.PASSWORD_HASH_COST,
    },
    tracing: tracingOf(values),
    warnings,
  }
}

function parseEnvironment(env: NodeJS.ProcessEnv): Environment {
  // Empty variables count as unset, as a shell's `FOO= npm start` means.
  const data = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''))
  try {
    return envSchema<Environment>({ schema: structuredClone(environmentSchema), data, env: false })
  } catch (error) {
    const { errors } = error as { errors?: { instancePath: string }[] }
    if (!errors?.length) throw error
    const words = refusals(errors, environmentSchema.properties)
    throw new ConfigError(`Invalid configuration: ${words.join('; ')}`)
  }
}

function replicaOf(values: Environment): ReplicaTarget | undefined {
  const { DATABASE_URL: primary, DATABASE_REPLICA_URL: url } = values
  if (url === undefined) return undefined
  if (primary === undefined) {
    throw new ConfigError(
      'Invalid configuration: DATABASE_REPLICA_URL needs DATABASE_URL: it names a streaming replica of that Postgres primary, and the embedded database has none',
    )
  }
  if (url === primary) {
    throw new ConfigError(
      'Invalid configuration: DATABASE_REPLICA_URL must name a streaming replica of DATABASE_URL, not DATABASE_URL itself',
    )
  }
  return { url, maxLagMs: values.REPLICA_MAX_LAG_MS }
}

function redisTargetOf(values: Environment): RedisTarget | undefined {
  const { REDIS_URL: url, REDIS_SENTINELS: sentinels, REDIS_SENTINEL_NAME: name } = values
  if ((sentinels === undefined) !== (name === undefined)) {
    throw new ConfigError(
      'Invalid configuration: REDIS_SENTINELS and REDIS_SENTINEL_NAME go together: the Sentinels to ask, and the name of the primary they watch (its `sentinel monitor` name)',
    )
  }
  if (sentinels === undefined || name === undefined) return url === undefined ? undefined : { url }
  if (url !== undefined) {
    throw new ConfigError(
      'Invalid configuration: set either REDIS_URL (one Redis) or REDIS_SENTINELS and REDIS_SENTINEL_NAME (a primary that Sentinel fails over), not both',
    )
  }
  if (/\s/.test(name)) {
    throw new ConfigError(
      `Invalid configuration: REDIS_SENTINEL_NAME must be the name of the primary in the Sentinels' configuration, without spaces; "${name}" is not`,
    )
  }
  return { sentinels: sentinels.split(',').map(sentinelAddressOf), name }
}

/** `host:port`, `[v6 address]:port` too. */
function sentinelAddressOf(entry: string): { host: string; port: number } {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:[\]]+)):(\d{1,5})$/.exec(entry.trim())
  const port = Number(match?.[3])
  const host = match?.[1] ?? match?.[2]
  if (!host || !(port >= 1 && port <= 65_535)) {
    throw new ConfigError(
      `Invalid configuration: REDIS_SENTINELS must be a comma-separated list of Sentinel addresses, each host:port, as in 10.0.0.5:26379,10.0.0.6:26379 or [fd00::5]:26379; "${entry}" is not one`,
    )
  }
  return { host, port }
}

/** Every variable the service reads, as the configuration's schema names them. */
export const CONFIGURATION_VARIABLES = Object.keys(environmentSchema.properties)

/** A page an emailed link opens: `?token=…` is appended, so it has no query or fragment. */
function linkBaseOf(name: string, value: string): string {
  const url = URL.parse(value)
  if (!url || !/^https?:$/.test(url.protocol) || url.search !== '' || url.hash !== '') {
    throw new ConfigError(
      `Invalid configuration: ${name} must be an http:// or https:// URL without a query or fragment, such as https://app.example.com/reset-password; "${value}" is not`,
    )
  }
  return value
}

const DURATION_UNITS_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
}
/** Twenty retries of at most a week each: past that, an endpoint is disabled anyway. */
const MAX_RETRIES = 20
const MAX_RETRY_DELAY_MS = 7 * 86_400_000

/** `5s,5m,30m,2h`: the delays between a delivery's attempts, in milliseconds. */
function retryScheduleOf(value: string): number[] {
  const delays = value.split(',').map((entry) => {
    const match = /^(\d{1,9})(ms|s|m|h|d)$/.exec(entry.trim())
    const ms = match ? Number(match[1]) * (DURATION_UNITS_MS[match[2] ?? ''] ?? 0) : Number.NaN
    return { entry, ms }
  })
  const invalid = delays.find(({ ms }) => !(ms >= 0 && ms <= MAX_RETRY_DELAY_MS))
  if (invalid !== undefined || delays.length > MAX_RETRIES) {
    const why = invalid
      ? `"${invalid.entry.trim()}" is not one`
      : `${delays.length} are more than ${MAX_RETRIES}`
    throw new ConfigError(
      `Invalid configuration: WEBHOOK_RETRY_SCHEDULE must be a comma-separated list of 1 to ${MAX_RETRIES} delays between attempts, each a whole number followed by ms, s, m, h or d and at most 7 days, as in ${DEFAULT_WEBHOOK_RETRY_SCHEDULE}; ${why}`,
    )
  }
  return delays.map(({ ms }) => ms)
}

/** A day, or a date and time with its offset: ISO 8601 as RFC 3339 writes them. */
const SUNSET_FORM = /^(\d{4})-(\d{2})-(\d{2})(T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2}))?$/

/**
 * V1_SUNSET's instant: a day stands for its 00:00 UTC. RFC 8594: a resource's sunset
 * cannot come before its deprecation (RFC 9745).
 */
function sunsetOf(value: string): Date {
  const at = sunsetInstant(value)
  if (!at) {
    throw new ConfigError(
      `Invalid configuration: V1_SUNSET must be a date, such as 2027-06-30 (00:00 UTC that day), or a date and time with its offset, such as 2027-06-30T12:00:00Z or 2027-06-30T14:00:00+02:00; "${value}" is neither`,
    )
  }
  if (at < V1_DEPRECATED_AT) {
    throw new ConfigError(
      `Invalid configuration: V1_SUNSET must not come before ${V1_DEPRECATED_AT.toISOString().slice(0, 10)}, when v1 was deprecated`,
    )
  }
  return at
}

function sunsetInstant(value: string): Date | undefined {
  const form = SUNSET_FORM.exec(value)
  if (!form) return undefined
  const [, year, month, day] = form.map(Number)
  const date = new Date(Date.UTC(year ?? 0, (month ?? 0) - 1, day))
  // Date reads 2027-02-30 as 2 March: the day must be one of its month's.
  if (date.getUTCMonth() !== (month ?? 0) - 1 || date.getUTCDate() !== day) return undefined
  const at = form[4] ? new Date(value) : date
  return Number.isNaN(at.getTime()) ? undefined : at
}

function trustedDocumentsOf(path: string | undefined): TrustedDocuments | undefined {
  if (path === undefined) return undefined
  try {
    return readTrustedDocuments(path)
  } catch (error) {
    throw new ConfigError(
      `Invalid configuration: GRAPHQL_TRUSTED_DOCUMENTS must be the path of a persisted-documents.json, a JSON object of documents each under the SHA-256 of its text in hex; the file ${(error as Error).message}`,
    )
  }
}

/** Checks what the OpenTelemetry SDK would otherwise reject obscurely, or ignore. */
function tracingOf(values: Environment): Config['tracing'] {
  for (const name of [
    'OTEL_EXPORTER_OTLP_ENDPOINT',
    'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  ] as const) {
    const value = values[name]
    if (value !== undefined && !/^https?:$/.test(URL.parse(value)?.protocol ?? '')) {
      throw new ConfigError(
        `Invalid configuration: ${name} must be an http:// or https:// URL, such as http://localhost:4318; "${value}" is not`,
      )
    }
  }
  // The OTel specification's default, and the traces' own setting before the general one.
  const protocol =
    values.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ??
    values.OTEL_EXPORTER_OTLP_PROTOCOL ??
    'http/protobuf'
  if (!TRACES_PROTOCOLS.includes(protocol as TracesProtocol)) {
    const detail =
      protocol === 'grpc' ? 'grpc is not supported' : `"${protocol}" is not one of them`
    throw new ConfigError(
      `Invalid configuration: OTEL_EXPORTER_OTLP_PROTOCOL (or OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) must be http/protobuf or http/json; ${detail}`,
    )
  }
  const endpoint = values.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? values.OTEL_EXPORTER_OTLP_ENDPOINT
  if (!endpoint || values.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined
  return { protocol: protocol as TracesProtocol }
}

/** How often Node looks for requests past their deadline, unless told otherwise. */
const NODE_CHECK_INTERVAL_MS = 30_000

/** Checking every quarter of REQUEST_TIMEOUT cuts a request within 1.25 times it. */
function timeoutCheckInterval(requestTimeoutMs: number) {
  if (requestTimeoutMs === 0) return NODE_CHECK_INTERVAL_MS
  return Math.min(NODE_CHECK_INTERVAL_MS, Math.ceil(requestTimeoutMs / 4))
}

/** `https://app.example.com,http://localhost:5173`: each an origin as a browser sends it. */
function parseOrigins(value: string | undefined): string[] {
  if (value === undefined) return []
  const origins = value.split(',').map((entry) => entry.trim())
  const invalid = origins.find((entry) => originOf(entry) !== entry)
  if (invalid !== undefined) {
    throw new ConfigError(
      `Invalid configuration: CORS_ORIGINS must be a comma-separated list of origins, each a scheme, a host and an optional port, as in https://app.example.com or http://localhost:5173, with no path, no trailing slash and no wildcard; "${invalid}" is not one`,
    )
  }
  return origins
}

/** The origin a browser would send for `entry`, if it is an http(s) address. */
function originOf(entry: string): string | undefined {
  if (entry.includes('*') || !URL.canParse(entry)) return undefined
  const url = new URL(entry)
  return ['http:', 'https:'].includes(url.protocol) ? url.origin : undefined
}

/** proxy-addr's names for the loopback, link-local and private address ranges. */
const ADDRESS_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal']

function parseTrustProxy(value: string | undefined): boolean | string[] {
  if (value === undefined || value === 'false') return false
  if (value === 'true') return true
  if (/^\d+$/.test(value)) {
    // Fastify 5 honours no hop count: it cannot tell a proxy from a client that reaches
    // the service directly and names any address it likes.
    throw new ConfigError(
      "Invalid configuration: TRUST_PROXY takes no hop count; list the proxies' addresses or CIDR ranges",
    )
  }
  const entries = value.split(',').map((entry) => entry.trim())
  const invalid = entries.find((entry) => !isAddressOrRange(entry))
  if (invalid !== undefined) {
    throw new ConfigError(
      `Invalid configuration: TRUST_PROXY must be true, false or a comma-separated list of addresses and CIDR ranges; "${invalid}" is none of these`,
    )
  }
  return entries
}

function isAddressOrRange(entry: string): boolean {
  if (ADDRESS_RANGE_NAMES.includes(entry)) return true
  const [address = '', prefix, ...rest] = entry.split('/')
  const version = isIP(address)
  if (version === 0 || rest.length > 0) return false
  if (prefix === undefined) return true
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128)
}
