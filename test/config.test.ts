import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../src/config.js'

/** docs/operations.md's variables whose default is one literal value: [name, value]. */
const documentedDefaults = readFileSync('docs/operations.md', 'utf8')
  .split('\n')
  .map((line) => /^\| `([A-Z0-9_]+)` \| `([^`]+)` \|/.exec(line))
  .filter((match) => match !== null)
  .map(([, name, value]) => [name, value] as [string, string])

describe('configuration', () => {
  it('has working defaults', () => {
    const config = loadConfig({})
    expect(config).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      dataDir: './data',
      databaseUrl: undefined,
      rateLimit: { max: 600, windowMs: 60_000, credentialsMax: 30 },
      maintenanceMode: false,
      logFormat: 'pretty',
      server: {
        trustProxy: false,
        requestTimeoutMs: 120_000,
        timeoutCheckIntervalMs: 30_000,
        connectionTimeoutMs: 60_000,
        keepAliveTimeoutMs: 72_000,
      },
      socketsPerCaller: 50,
      readCacheTtlSeconds: 5,
      presenceTimeoutMs: 30_000,
      metricsIntervalMs: 5000,
      metricsToken: undefined,
      auth: {
        accessTokenTtlSeconds: 900,
        refreshTokenTtlSeconds: 2_592_000,
        admin: undefined,
        passwordHashCost: 15,
      },
    })
    expect(config.auth.jwtSecret.length).toBeGreaterThanOrEqual(32)
    expect(config.warnings).toEqual([expect.stringContaining('JWT_SECRET')])
  })

  it.each(documentedDefaults)('defaults %s to %s, as docs/operations.md says', (name, value) => {
    // A fixed secret: without one each load draws its own.
    const secret = { JWT_SECRET: 'a-secret-of-at-least-32-characters!!' }
    expect(loadConfig({ ...secret, [name]: value })).toEqual(loadConfig(secret))
  })

  it('reads every variable', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      DATA_DIR: '/var/lib/service',
      DATABASE_URL: 'postgres://db/service',
      JWT_SECRET: 's'.repeat(32),
      ACCESS_TOKEN_TTL: '60',
      REFRESH_TOKEN_TTL: '3600',
      ADMIN_EMAIL: 'root@example.com',
      ADMIN_PASSWORD: 'long-enough',
      LOG_LEVEL: 'debug',
      LOG_FORMAT: 'json',
      RATE_LIMIT_MAX: '50',
      RATE_LIMIT_WINDOW: '1000',
      MAINTENANCE_MODE: 'true',
      TRUST_PROXY: '10.0.0.0/8',
      REQUEST_TIMEOUT: '10000',
      CONNECTION_TIMEOUT: '0',
      KEEP_ALIVE_TIMEOUT: '650000',
      WS_SOCKETS_PER_CALLER: '500',
      CACHE_TTL_SECONDS: '0',
      WEBHOOK_SECRET: 'a-webhook-secret-of-some-length',
      PRESENCE_TIMEOUT_MS: '2000',
      METRICS_INTERVAL_MS: '250',
      METRICS_TOKEN: 'a-metrics-token-of-some-length',
      V1_SUNSET: '2027-06-30T00:00:00Z',
      V1_MIGRATION_URL: 'https://docs.example.com/moving-to-v2',
      SMTP_URL: 'smtps://user:pass@mail.example.com:465',
      EMAIL_FROM: 'shop@example.com',
      EMAIL_POLL_INTERVAL_MS: '250',
      EMAIL_RETRY_BASE_MS: '100',
      EMAIL_MAX_ATTEMPTS: '7',
      UPLOAD_MAX_BYTES: '1048576',
      UPLOAD_QUOTA_BYTES: '0',
      PASSWORD_RESET_URL: 'https://app.example.com/account/reset',
      PASSWORD_RESET_TTL: '600',
      EMAIL_VERIFY_URL: 'https://app.example.com/account/verify',
      EMAIL_VERIFY_TTL: '3600',
    })
    expect(config).toMatchObject({
      port: 8080,
      host: '0.0.0.0',
      dataDir: '/var/lib/service',
      databaseUrl: 'postgres://db/service',
      logLevel: 'debug',
      logFormat: 'json',
      rateLimit: { max: 50, windowMs: 1000, credentialsMax: 30 },
      maintenanceMode: true,
      server: {
        trustProxy: ['10.0.0.0/8'],
        requestTimeoutMs: 10_000,
        timeoutCheckIntervalMs: 2500,
        connectionTimeoutMs: 0,
        keepAliveTimeoutMs: 650_000,
      },
      socketsPerCaller: 500,
      readCacheTtlSeconds: 0,
      webhookSecret: 'a-webhook-secret-of-some-length',
      presenceTimeoutMs: 2000,
      metricsIntervalMs: 250,
      metricsToken: 'a-metrics-token-of-some-length',
      v1Sunset: {
        at: new Date('2027-06-30T00:00:00Z'),
        migrationUrl: 'https://docs.example.com/moving-to-v2',
      },
      uploadMaxBytes: 1_048_576,
      uploadQuotaBytes: 0,
      emails: {
        smtpUrl: 'smtps://user:pass@mail.example.com:465',
        from: 'shop@example.com',
        pollIntervalMs: 250,
        retryBaseMs: 100,
        maxAttempts: 7,
      },
      accountEmails: {
        passwordReset: { url: 'https://app.example.com/account/reset', ttlSeconds: 600 },
        emailVerification: { url: 'https://app.example.com/account/verify', ttlSeconds: 3600 },
      },
      auth: {
        jwtSecret: 's'.repeat(32),
        accessTokenTtlSeconds: 60,
        refreshTokenTtlSeconds: 3600,
        admin: { email: 'root@example.com', password: 'long-enough' },
      },
      warnings: [],
    })
  })

  it.each([
    ['development', undefined, 'pretty'],
    ['production', undefined, 'json'],
    ['test', undefined, 'json'],
    ['development', 'json', 'json'],
    ['production', 'pretty', 'pretty'],
  ])('logs NODE_ENV=%s with LOG_FORMAT=%s as %s', (nodeEnv, logFormat, expected) => {
    const environment = { NODE_ENV: nodeEnv, JWT_SECRET: 's'.repeat(32), LOG_FORMAT: logFormat }
    expect(loadConfig(environment).logFormat).toBe(expected)
  })

  it.each([
    ['false', false],
    ['true', true],
    ['10.0.0.1', ['10.0.0.1']],
    ['127.0.0.1, 10.0.0.0/8,fd00::/8,::1', ['127.0.0.1', '10.0.0.0/8', 'fd00::/8', '::1']],
    ['loopback,uniquelocal', ['loopback', 'uniquelocal']],
  ])('trusts TRUST_PROXY=%s as %o', (value, trustProxy) => {
    expect(loadConfig({ TRUST_PROXY: value }).server.trustProxy).toEqual(trustProxy)
  })

  it.each(['1', '10.0.0/8', '10.0.0.0/33', '::1/129', '10.0.0.0/8/8', 'proxy.internal', 'yes'])(
    'rejects TRUST_PROXY=%s, naming it',
    (value) => {
      expect(() => loadConfig({ TRUST_PROXY: value })).toThrow(ConfigError)
      expect(() => loadConfig({ TRUST_PROXY: value })).toThrow('TRUST_PROXY')
    },
  )

  it('looks for overdue requests often enough to cut each within 1.25 times REQUEST_TIMEOUT', () => {
    expect(loadConfig({ REQUEST_TIMEOUT: '600' }).server.timeoutCheckIntervalMs).toBe(150)
    // No request limit: Node's interval still serves its 60 s limit on headers.
    expect(loadConfig({ REQUEST_TIMEOUT: '0' }).server.timeoutCheckIntervalMs).toBe(30_000)
  })

  it('switches rate limiting off with RATE_LIMIT_MAX=0', () => {
    expect(loadConfig({ RATE_LIMIT_MAX: '0' }).rateLimit).toBeUndefined()
  })

  it('lifts the cap on WebSockets per caller with WS_SOCKETS_PER_CALLER=0', () => {
    expect(loadConfig({ WS_SOCKETS_PER_CALLER: '0' }).socketsPerCaller).toBeUndefined()
  })

  it('lifts the cap on WebSockets per caller with the rate limit, RATE_LIMIT_MAX=0', () => {
    expect(loadConfig({ RATE_LIMIT_MAX: '0' }).socketsPerCaller).toBeUndefined()
    expect(loadConfig({ RATE_LIMIT_MAX: '1' }).socketsPerCaller).toBe(50)
  })

  it.each([
    [{ PORT: 'eighty' }, 'PORT'],
    [{ RATE_LIMIT_MAX: '-1' }, 'RATE_LIMIT_MAX'],
    [{ RATE_LIMIT_WINDOW: '0' }, 'RATE_LIMIT_WINDOW'],
    [{ MAINTENANCE_MODE: 'maybe' }, 'MAINTENANCE_MODE'],
    [{ WS_SOCKETS_PER_CALLER: '-1' }, 'WS_SOCKETS_PER_CALLER'],
    [{ CACHE_TTL_SECONDS: '3601' }, 'CACHE_TTL_SECONDS'],
    [{ CACHE_TTL_SECONDS: '1.5' }, 'CACHE_TTL_SECONDS'],
    [{ WEBHOOK_SECRET: 'too-short' }, 'WEBHOOK_SECRET'],
    [{ PRESENCE_TIMEOUT_MS: '999' }, 'PRESENCE_TIMEOUT_MS'],
    [{ PRESENCE_TIMEOUT_MS: 'half a minute' }, 'PRESENCE_TIMEOUT_MS'],
    [{ METRICS_INTERVAL_MS: '99' }, 'METRICS_INTERVAL_MS'],
    [{ METRICS_INTERVAL_MS: '3600001' }, 'METRICS_INTERVAL_MS'],
    [{ METRICS_TOKEN: 'too-short' }, 'METRICS_TOKEN'],
    [{ V1_SUNSET: 'next summer' }, 'V1_SUNSET'],
    [{ SMTP_URL: 'mail.example.com' }, 'SMTP_URL'],
    [{ EMAIL_FROM: 'shop' }, 'EMAIL_FROM'],
    [{ EMAIL_POLL_INTERVAL_MS: '9' }, 'EMAIL_POLL_INTERVAL_MS'],
    [{ EMAIL_RETRY_BASE_MS: 'soon' }, 'EMAIL_RETRY_BASE_MS'],
    [{ EMAIL_MAX_ATTEMPTS: '0' }, 'EMAIL_MAX_ATTEMPTS'],
    [{ EMAIL_MAX_ATTEMPTS: '21' }, 'EMAIL_MAX_ATTEMPTS'],
    [{ UPLOAD_MAX_BYTES: '0' }, 'UPLOAD_MAX_BYTES'],
    [{ UPLOAD_MAX_BYTES: '1073741825' }, 'UPLOAD_MAX_BYTES'],
    [{ UPLOAD_QUOTA_BYTES: '-1' }, 'UPLOAD_QUOTA_BYTES'],
    [{ UPLOAD_QUOTA_BYTES: 'a gibibyte' }, 'UPLOAD_QUOTA_BYTES'],
    [{ V1_SUNSET: '2027-13-01T00:00:00Z' }, 'V1_SUNSET'],
    [{ V1_SUNSET: '2026-01-01T00:00:00Z' }, 'V1_SUNSET'],
    [{ PORT: '70000' }, 'PORT'],
    [{ DATABASE_URL: 'mysql://db' }, 'DATABASE_URL'],
    [{ JWT_SECRET: 'short' }, 'JWT_SECRET'],
    [{ ACCESS_TOKEN_TTL: '0' }, 'ACCESS_TOKEN_TTL'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ LOG_FORMAT: 'yaml' }, 'LOG_FORMAT'],
    [{ REQUEST_TIMEOUT: '-1' }, 'REQUEST_TIMEOUT'],
    [{ CONNECTION_TIMEOUT: 'soon' }, 'CONNECTION_TIMEOUT'],
    [{ KEEP_ALIVE_TIMEOUT: '0' }, 'KEEP_ALIVE_TIMEOUT'],
    [{ ADMIN_EMAIL: 'root@example.com' }, 'ADMIN_PASSWORD'],
    [{ NODE_ENV: 'production' }, 'JWT_SECRET'],
    [{ PASSWORD_HASH_COST: '9' }, 'PASSWORD_HASH_COST'],
    [{ PASSWORD_HASH_COST: '18' }, 'PASSWORD_HASH_COST'],
    [{ PASSWORD_RESET_TTL: '59' }, 'PASSWORD_RESET_TTL'],
    [{ PASSWORD_RESET_TTL: 'half an hour' }, 'PASSWORD_RESET_TTL'],
    [{ EMAIL_VERIFY_TTL: '2592001' }, 'EMAIL_VERIFY_TTL'],
    [
      { NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(32), PASSWORD_HASH_COST: '14' },
      'PASSWORD_HASH_COST',
    ],
  ])('rejects %o, naming %s', (environment, variable) => {
    expect(() => loadConfig(environment)).toThrow(ConfigError)
    expect(() => loadConfig(environment)).toThrow(variable)
  })

  it.each([
    ['2027-06-30', '2027-06-30T00:00:00.000Z'],
    ['2028-02-29', '2028-02-29T00:00:00.000Z'],
    ['2027-06-30T00:00:00Z', '2027-06-30T00:00:00.000Z'],
    ['2027-06-30T14:30:00.5+02:00', '2027-06-30T12:30:00.500Z'],
  ])('takes V1_SUNSET=%s as %s', (value, instant) => {
    expect(loadConfig({ V1_SUNSET: value }).v1Sunset?.at.toISOString()).toBe(instant)
  })

  it.each([
    '2027-02-29',
    '2027-06-31',
    '2027-13-01',
    '2027-6-30',
    '2027-06-30T12:00:00',
    '30/06/2027',
  ])('refuses V1_SUNSET=%s, which is no day of the calendar or has no offset', (value) => {
    expect(() => loadConfig({ V1_SUNSET: value })).toThrow(
      `Invalid configuration: V1_SUNSET must be a date, such as 2027-06-30 (00:00 UTC that day), or a date and time with its offset, such as 2027-06-30T12:00:00Z or 2027-06-30T14:00:00+02:00; "${value}" is neither`,
    )
  })

  it('traces only when an OTLP endpoint is set and the SDK is not disabled', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4318' }
    expect(loadConfig({}).tracing).toBeUndefined()
    expect(loadConfig(endpoint).tracing).toEqual({ protocol: 'http/protobuf' })
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://collector.example/v1/traces' })
        .tracing,
    ).toEqual({ protocol: 'http/protobuf' })
    expect(loadConfig({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).tracing).toEqual({
      protocol: 'http/json',
    })
    expect(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: 'true' }).tracing).toBeUndefined()
  })

  it.each([
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'localhost:4318' }, 'must be an http:// or https:// URL'],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'grpc://collector' }, 'must be an http:// or https://'],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      'grpc is not supported',
    ],
    [{ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'json' }, '"json" is not one of them'],
    [{ PASSWORD_RESET_URL: 'app.example.com/reset' }, 'PASSWORD_RESET_URL must be an http://'],
    [{ PASSWORD_RESET_URL: 'ftp://app.example.com/reset' }, 'without a query or fragment'],
    [{ EMAIL_VERIFY_URL: 'https://app.example.com/verify?from=mail' }, 'EMAIL_VERIFY_URL must'],
    [{ EMAIL_VERIFY_URL: 'https://app.example.com/#/verify' }, 'without a query or fragment'],
  ])('rejects %o in words: %s', (environment, words) => {
    expect(() => loadConfig(environment)).toThrow(ConfigError)
    expect(() => loadConfig(environment)).toThrow(words)
  })
})

describe('a read replica', () => {
  const primary = { DATABASE_URL: 'postgres://db/catalog' }

  it('is none by default, and DATABASE_REPLICA_URL with REPLICA_MAX_LAG_MS (1000) otherwise', () => {
    expect(loadConfig(primary).replica).toBeUndefined()
    const replica = { ...primary, DATABASE_REPLICA_URL: 'postgres://reader@db-replica/catalog' }
    expect(loadConfig(replica).replica).toEqual({
      url: 'postgres://reader@db-replica/catalog',
      maxLagMs: 1000,
    })
    expect(loadConfig({ ...replica, REPLICA_MAX_LAG_MS: '250' }).replica?.maxLagMs).toBe(250)
  })
})

describe('Redis through Sentinel', () => {
  const sentinels = { REDIS_SENTINELS: '10.0.0.5:26379, sentinel-b:26380,[fd00::5]:26379' }

  it('reads REDIS_URL as one Redis, and nothing as no Redis', () => {
    expect(loadConfig({}).redis).toBeUndefined()
    expect(loadConfig({ REDIS_URL: 'redis://cache:6379' }).redis).toEqual({
      url: 'redis://cache:6379',
    })
  })

  it('reads REDIS_SENTINELS and REDIS_SENTINEL_NAME as the Sentinels and their primary', () => {
    expect(loadConfig({ ...sentinels, REDIS_SENTINEL_NAME: 'catalog' }).redis).toEqual({
      sentinels: [
        { host: '10.0.0.5', port: 26379 },
        { host: 'sentinel-b', port: 26380 },
        { host: 'fd00::5', port: 26379 },
      ],
      name: 'catalog',
    })
  })

  it.each([
    [sentinels, 'REDIS_SENTINELS and REDIS_SENTINEL_NAME go together'],
    [{ REDIS_SENTINEL_NAME: 'catalog' }, 'REDIS_SENTINELS and REDIS_SENTINEL_NAME go together'],
    [
      { ...sentinels, REDIS_SENTINEL_NAME: 'catalog', REDIS_URL: 'redis://cache:6379' },
      'set either REDIS_URL (one Redis) or REDIS_SENTINELS',
    ],
    [{ REDIS_SENTINELS: '10.0.0.5', REDIS_SENTINEL_NAME: 'catalog' }, '"10.0.0.5" is not one'],
    [{ REDIS_SENTINELS: '10.0.0.5:0', REDIS_SENTINEL_NAME: 'catalog' }, '"10.0.0.5:0" is not'],
    [{ REDIS_SENTINELS: 'a:26379,,b:26379', REDIS_SENTINEL_NAME: 'catalog' }, '"" is not one'],
    [{ REDIS_SENTINELS: 'fd00::5:26379', REDIS_SENTINEL_NAME: 'catalog' }, 'each host:port'],
    [{ REDIS_SENTINELS: 'a:65536', REDIS_SENTINEL_NAME: 'catalog' }, '"a:65536" is not one'],
    [{ ...sentinels, REDIS_SENTINEL_NAME: 'my primary' }, 'REDIS_SENTINEL_NAME must be the name'],
  ])('rejects %o in words: %s', (environment, words) => {
    expect(() => loadConfig(environment)).toThrow(ConfigError)
    expect(() => loadConfig(environment)).toThrow(words)
  })
})
