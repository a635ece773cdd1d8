import { describe, expect, it } from 'vitest'
import { CONFIGURATION_VARIABLES, ConfigError, loadConfig } from '../src/config.js'

const secret = 's'.repeat(32)

/**
 * A bad value of every variable, and the whole message it stops the start with: what
 * the variable takes, in words. The table must name every variable config.ts reads.
 */
const REFUSALS: [variable: string, environment: Record<string, string>, message: string][] = [
  ['NODE_ENV', { NODE_ENV: 'staging' }, 'NODE_ENV must be one of development, production or test'],
  ['PORT', { PORT: 'eighty' }, 'PORT must be a whole number from 0 to 65535'],
  [
    'DATABASE_URL',
    { DATABASE_URL: 'mysql://db' },
    'DATABASE_URL must be a postgres:// or postgresql:// URL, such as postgres://user:password@db.internal:5432/catalog',
  ],
  [
    'DATABASE_TIMEOUT',
    { DATABASE_TIMEOUT: '50' },
    'DATABASE_TIMEOUT must be a whole number of milliseconds from 100 to 600000',
  ],
  [
    'DATABASE_REPLICA_URL',
    { DATABASE_URL: 'postgres://db/catalog', DATABASE_REPLICA_URL: 'db-replica:5432' },
    'DATABASE_REPLICA_URL must be a postgres:// or postgresql:// URL of a streaming replica of DATABASE_URL, such as postgres://reader@db-replica.internal:5432/catalog',
  ],
  [
    'DATABASE_REPLICA_URL',
    { DATABASE_REPLICA_URL: 'postgres://db-replica/catalog' },
    'DATABASE_REPLICA_URL needs DATABASE_URL: it names a streaming replica of that Postgres primary, and the embedded database has none',
  ],
  [
    'DATABASE_REPLICA_URL',
    { DATABASE_URL: 'postgres://db/catalog', DATABASE_REPLICA_URL: 'postgres://db/catalog' },
    'DATABASE_REPLICA_URL must name a streaming replica of DATABASE_URL, not DATABASE_URL itself',
  ],
  [
    'REPLICA_MAX_LAG_MS',
    { REPLICA_MAX_LAG_MS: '50' },
    'REPLICA_MAX_LAG_MS must be a whole number of milliseconds from 100 to 3600000',
  ],
  [
    'REDIS_URL',
    { REDIS_URL: 'localhost:6379' },
    'REDIS_URL must be a redis:// or rediss:// URL, such as redis://cache.internal:6379',
  ],
  [
    'REDIS_SENTINELS',
    { REDIS_SENTINELS: 'sentinel-1', REDIS_SENTINEL_NAME: 'primary' },
    'REDIS_SENTINELS must be a comma-separated list of Sentinel addresses, each host:port, as in 10.0.0.5:26379,10.0.0.6:26379 or [fd00::5]:26379; "sentinel-1" is not one',
  ],
  [
    'REDIS_SENTINEL_NAME',
    { REDIS_SENTINELS: 'sentinel-1:26379', REDIS_SENTINEL_NAME: 'my primary' },
    `REDIS_SENTINEL_NAME must be the name of the primary in the Sentinels' configuration, without spaces; "my primary" is not`,
  ],
  [
    'REDIS_KEY_PREFIX',
    { REDIS_KEY_PREFIX: 'p'.repeat(101) },
    'REDIS_KEY_PREFIX must be at most 100 characters long',
  ],
  [
    'REDIS_TIMEOUT_MS',
    { REDIS_TIMEOUT_MS: '0' },
    'REDIS_TIMEOUT_MS must be a whole number of milliseconds from 1 to 60000',
  ],
  ['JWT_SECRET', { JWT_SECRET: 'short' }, 'JWT_SECRET must be at least 32 characters long'],
  [
    'DATA_ENCRYPTION_KEY',
    { DATA_ENCRYPTION_KEY: 'short' },
    'DATA_ENCRYPTION_KEY must be a secret of at least 32 characters, such as the output of `openssl rand -base64 48`',
  ],
  [
    'ACCESS_TOKEN_TTL',
    { ACCESS_TOKEN_TTL: '0' },
    'ACCESS_TOKEN_TTL must be a whole number of seconds, at least 1',
  ],
  [
    'REFRESH_TOKEN_TTL',
    { REFRESH_TOKEN_TTL: 'a month' },
    'REFRESH_TOKEN_TTL must be a whole number of seconds, at least 1',
  ],
  [
    'DEVICE_TOKEN_TTL',
    { DEVICE_TOKEN_TTL: '1.5' },
    'DEVICE_TOKEN_TTL must be a whole number of seconds, at least 1',
  ],
  [
    'ADMIN_EMAIL',
    { ADMIN_EMAIL: 'root', ADMIN_PASSWORD: 'long-enough' },
    'ADMIN_EMAIL must be an email address, such as admin@example.com',
  ],
  [
    'ADMIN_PASSWORD',
    { ADMIN_EMAIL: 'root@example.com', ADMIN_PASSWORD: 'short' },
    'ADMIN_PASSWORD must be 8 to 128 characters long',
  ],
  [
    'ADMIN_PASSWORD',
    { ADMIN_EMAIL: 'root@example.com' },
    "ADMIN_EMAIL and ADMIN_PASSWORD are set together, an admin's email and password, or neither is",
  ],
  [
    'PASSWORD_HASH_COST',
    { PASSWORD_HASH_COST: '9' },
    'PASSWORD_HASH_COST must be a whole number from 10 to 17',
  ],
  [
    'PASSWORD_HASH_COST',
    { NODE_ENV: 'production', JWT_SECRET: secret, PASSWORD_HASH_COST: '14' },
    'PASSWORD_HASH_COST must be from 15 to 17 when NODE_ENV=production; lower costs are for tests',
  ],
  [
    'LOG_LEVEL',
    { LOG_LEVEL: 'loud' },
    'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace or silent',
  ],
  ['LOG_FORMAT', { LOG_FORMAT: 'yaml' }, 'LOG_FORMAT must be one of pretty or json'],
  [
    'RATE_LIMIT_MAX',
    { RATE_LIMIT_MAX: '-1' },
    'RATE_LIMIT_MAX must be a whole number of requests, at least 0',
  ],
  [
    'RATE_LIMIT_WINDOW',
    { RATE_LIMIT_WINDOW: '0' },
    'RATE_LIMIT_WINDOW must be a whole number of milliseconds, at least 1',
  ],
  [
    'AUTH_RATE_LIMIT_MAX',
    { AUTH_RATE_LIMIT_MAX: '0' },
    'AUTH_RATE_LIMIT_MAX must be a whole number of attempts, at least 1',
  ],
  ['MAINTENANCE_MODE', { MAINTENANCE_MODE: 'maybe' }, 'MAINTENANCE_MODE must be true or false'],
  ['API_DOCS', { API_DOCS: 'yes' }, 'API_DOCS must be true or false'],
  [
    'GRAPHQL_INTROSPECTION',
    { GRAPHQL_INTROSPECTION: 'off' },
    'GRAPHQL_INTROSPECTION must be true or false',
  ],
  [
    'GRAPHQL_TRUSTED_DOCUMENTS',
    { GRAPHQL_TRUSTED_DOCUMENTS: '/nowhere/persisted-documents.json' },
    'GRAPHQL_TRUSTED_DOCUMENTS must be the path of a persisted-documents.json, a JSON object of documents each under the SHA-256 of its text in hex; the file cannot be read (ENOENT): /nowhere/persisted-documents.json',
  ],
  [
    'TRUST_PROXY',
    { TRUST_PROXY: 'yes' },
    'TRUST_PROXY must be true, false or a comma-separated list of addresses and CIDR ranges; "yes" is none of these',
  ],
  [
    'TRUST_PROXY',
    { TRUST_PROXY: '2' },
    "TRUST_PROXY takes no hop count; list the proxies' addresses or CIDR ranges",
  ],
  [
    'CORS_ORIGINS',
    { CORS_ORIGINS: 'https://app.example.com/' },
    'CORS_ORIGINS must be a comma-separated list of origins, each a scheme, a host and an optional port, as in https://app.example.com or http://localhost:5173, with no path, no trailing slash and no wildcard; "https://app.example.com/" is not one',
  ],
  [
    'REQUEST_TIMEOUT',
    { REQUEST_TIMEOUT: '-1' },
    'REQUEST_TIMEOUT must be a whole number of milliseconds, at least 0',
  ],
  [
    'CONNECTION_TIMEOUT',
    { CONNECTION_TIMEOUT: 'soon' },
    'CONNECTION_TIMEOUT must be a whole number of milliseconds, at least 0',
  ],
  [
    'KEEP_ALIVE_TIMEOUT',
    { KEEP_ALIVE_TIMEOUT: '0' },
    'KEEP_ALIVE_TIMEOUT must be a whole number of milliseconds, at least 1',
  ],
  [
    'SHUTDOWN_DRAIN_MS',
    { SHUTDOWN_DRAIN_MS: '20001' },
    'SHUTDOWN_DRAIN_MS must be a whole number of milliseconds from 0 to 20000',
  ],
  [
    'WS_SOCKETS_PER_CALLER',
    { WS_SOCKETS_PER_CALLER: '-1' },
    'WS_SOCKETS_PER_CALLER must be a whole number of sockets, at least 0',
  ],
  [
    'CACHE_TTL_SECONDS',
    { CACHE_TTL_SECONDS: '3601' },
    'CACHE_TTL_SECONDS must be a whole number of seconds from 0 to 3600',
  ],
  [
    'WEBHOOK_SECRET',
    { WEBHOOK_SECRET: 'too-short' },
    'WEBHOOK_SECRET must be 16 to 512 characters long',
  ],
  [
    'PRESENCE_TIMEOUT_MS',
    { PRESENCE_TIMEOUT_MS: '999' },
    'PRESENCE_TIMEOUT_MS must be a whole number of milliseconds from 1000 to 600000',
  ],
  [
    'METRICS_INTERVAL_MS',
    { METRICS_INTERVAL_MS: '99' },
    'METRICS_INTERVAL_MS must be a whole number of milliseconds from 100 to 3600000',
  ],
  [
    'METRICS_TOKEN',
    { METRICS_TOKEN: 'too-short' },
    'METRICS_TOKEN must be 16 to 512 characters long',
  ],
  [
    'V1_SUNSET',
    { V1_SUNSET: 'next summer' },
    'V1_SUNSET must be a date, such as 2027-06-30 (00:00 UTC that day), or a date and time with its offset, such as 2027-06-30T12:00:00Z or 2027-06-30T14:00:00+02:00; "next summer" is neither',
  ],
  [
    'V1_SUNSET',
    { V1_SUNSET: '2026-01-01' },
    'V1_SUNSET must not come before 2026-11-22, when v1 was deprecated',
  ],
  [
    'V1_MIGRATION_URL',
    { V1_MIGRATION_URL: `https://docs.example.com/${'a'.repeat(2048)}` },
    'V1_MIGRATION_URL must be 1 to 2048 characters long',
  ],
  [
    'SMTP_URL',
    { SMTP_URL: 'mail.example.com' },
    'SMTP_URL must be an smtp:// or smtps:// URL, such as smtps://user:password@mail.example.com:465',
  ],
  [
    'EMAIL_FROM',
    { EMAIL_FROM: 'shop' },
    'EMAIL_FROM must be an email address, such as shop@example.com',
  ],
  [
    'EMAIL_POLL_INTERVAL_MS',
    { EMAIL_POLL_INTERVAL_MS: '9' },
    'EMAIL_POLL_INTERVAL_MS must be a whole number of milliseconds from 10 to 3600000',
  ],
  [
    'EMAIL_RETRY_BASE_MS',
    { EMAIL_RETRY_BASE_MS: 'soon' },
    'EMAIL_RETRY_BASE_MS must be a whole number of milliseconds from 10 to 3600000',
  ],
  [
    'EMAIL_MAX_ATTEMPTS',
    { EMAIL_MAX_ATTEMPTS: '21' },
    'EMAIL_MAX_ATTEMPTS must be a whole number of attempts from 1 to 20',
  ],
  [
    'PASSWORD_RESET_URL',
    { PASSWORD_RESET_URL: 'https://app.example.com/reset?from=mail' },
    'PASSWORD_RESET_URL must be an http:// or https:// URL without a query or fragment, such as https://app.example.com/reset-password; "https://app.example.com/reset?from=mail" is not',
  ],
  [
    'PASSWORD_RESET_TTL',
    { PASSWORD_RESET_TTL: '59' },
    'PASSWORD_RESET_TTL must be a whole number of seconds from 60 to 86400',
  ],
  [
    'EMAIL_VERIFY_URL',
    { EMAIL_VERIFY_URL: 'ftp://app.example.com/verify' },
    'EMAIL_VERIFY_URL must be an http:// or https:// URL without a query or fragment, such as https://app.example.com/reset-password; "ftp://app.example.com/verify" is not',
  ],
  [
    'EMAIL_VERIFY_TTL',
    { EMAIL_VERIFY_TTL: '2592001' },
    'EMAIL_VERIFY_TTL must be a whole number of seconds from 60 to 2592000',
  ],
  [
    'UPLOAD_MAX_BYTES',
    { UPLOAD_MAX_BYTES: '0' },
    'UPLOAD_MAX_BYTES must be a whole number of bytes from 1 to 1073741824',
  ],
  [
    'UPLOAD_QUOTA_BYTES',
    { UPLOAD_QUOTA_BYTES: 'a gibibyte' },
    'UPLOAD_QUOTA_BYTES must be a whole number of bytes from 0 to 1125899906842624',
  ],
  [
    'WEBHOOK_RETRY_SCHEDULE',
    { WEBHOOK_RETRY_SCHEDULE: 'soon' },
    'WEBHOOK_RETRY_SCHEDULE must be a comma-separated list of 1 to 20 delays between attempts, each a whole number followed by ms, s, m, h or d and at most 7 days, as in 5s,5m,30m,2h,5h,10h; "soon" is not one',
  ],
  [
    'WEBHOOK_ALLOW_PRIVATE_TARGETS',
    { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'yes' },
    'WEBHOOK_ALLOW_PRIVATE_TARGETS must be true or false',
  ],
  [
    'WEBHOOK_CONCURRENCY',
    { WEBHOOK_CONCURRENCY: '1001' },
    'WEBHOOK_CONCURRENCY must be a whole number of requests in flight from 0 to 1000',
  ],
  [
    'OTEL_EXPORTER_OTLP_ENDPOINT',
    { OTEL_EXPORTER_OTLP_ENDPOINT: 'localhost:4318' },
    'OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL, such as http://localhost:4318; "localhost:4318" is not',
  ],
  [
    'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'grpc://collector:4317' },
    'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http:// or https:// URL, such as http://localhost:4318; "grpc://collector:4317" is not',
  ],
  [
    'OTEL_EXPORTER_OTLP_PROTOCOL',
    { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
    'OTEL_EXPORTER_OTLP_PROTOCOL (or OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) must be http/protobuf or http/json; grpc is not supported',
  ],
  [
    'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
    { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'thrift' },
    'OTEL_EXPORTER_OTLP_PROTOCOL (or OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) must be http/protobuf or http/json; "thrift" is not one of them',
  ],
  [
    'JWT_SECRET',
    { NODE_ENV: 'production' },
    'JWT_SECRET is required when NODE_ENV=production: a secret of at least 32 characters, such as the output of `openssl rand -base64 48`',
  ],
]

/**
 * Variables every value of which is taken: a name or a path (an empty one is unset), and
 * OTEL_SDK_DISABLED, which the OpenTelemetry SDK reads for itself ("true" disables it).
 */
const TAKES_ANY_VALUE = ['HOST', 'DATA_DIR', 'OTEL_SDK_DISABLED']

/** What a refusal must not hold: ajv's words, a schema keyword, or a regular expression. */
const RAW =
  /must match|must NOT|must be (integer|boolean|string|equal)|pattern|allowed values|\^|\$\/|\\[dsw]|\(\?|\[\^/

function refusalOf(environment: Record<string, string>): string {
  try {
    loadConfig(environment)
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    return (error as Error).message
  }
  throw new Error(`${JSON.stringify(environment)} was taken`)
}

describe('configuration errors', () => {
  it('have a bad value of every variable in the table, but those that take any', () => {
    const covered = new Set(REFUSALS.map(([variable]) => variable))
    for (const variable of TAKES_ANY_VALUE) expect(covered.has(variable), variable).toBe(false)
    expect([...covered, ...TAKES_ANY_VALUE].sort()).toEqual([...CONFIGURATION_VARIABLES].sort())
  })

  it.each(REFUSALS)('refuse a bad %s, saying what it takes: %o', (variable, environment, words) => {
    const message = refusalOf(environment)
    expect(message).toBe(`Invalid configuration: ${words}`)
    expect(message).toContain(variable)
    expect(message).not.toMatch(RAW)
  })

  it('name each bad variable once, with what each takes', () => {
    expect(refusalOf({ PORT: '-1', LOG_LEVEL: 'loud', JWT_SECRET: 'short' })).toBe(
      'Invalid configuration: PORT must be a whole number from 0 to 65535; JWT_SECRET must be at least 32 characters long; LOG_LEVEL must be one of fatal, error, warn, info, debug, trace or silent',
    )
  })
})
