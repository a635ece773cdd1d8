import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../src/config.js'

describe('configuration', () => {
  it('has working defaults', () => {
    const config = loadConfig({})
    expect(config).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      dataDir: './data',
      databaseUrl: undefined,
      rateLimit: { max: 600, windowMs: 60_000 },
      maintenanceMode: false,
      socketsPerCaller: 50,
      auth: { accessTokenTtlSeconds: 900, refreshTokenTtlSeconds: 2_592_000, admin: undefined },
    })
    expect(config.auth.jwtSecret.length).toBeGreaterThanOrEqual(32)
    expect(config.warnings).toEqual([expect.stringContaining('JWT_SECRET')])
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
      RATE_LIMIT_MAX: '50',
      RATE_LIMIT_WINDOW: '1000',
      MAINTENANCE_MODE: 'true',
      WS_SOCKETS_PER_CALLER: '500',
    })
    expect(config).toMatchObject({
      port: 8080,
      host: '0.0.0.0',
      dataDir: '/var/lib/service',
      databaseUrl: 'postgres://db/service',
      logLevel: 'debug',
      rateLimit: { max: 50, windowMs: 1000 },
      maintenanceMode: true,
      socketsPerCaller: 500,
      auth: {
        jwtSecret: 's'.repeat(32),
        accessTokenTtlSeconds: 60,
        refreshTokenTtlSeconds: 3600,
        admin: { email: 'root@example.com', password: 'long-enough' },
      },
      warnings: [],
    })
  })

  it('switches rate limiting off with RATE_LIMIT_MAX=0', () => {
    expect(loadConfig({ RATE_LIMIT_MAX: '0' }).rateLimit).toBeUndefined()
  })

  it('lifts the cap on WebSockets per caller with WS_SOCKETS_PER_CALLER=0', () => {
    expect(loadConfig({ WS_SOCKETS_PER_CALLER: '0' }).socketsPerCaller).toBeUndefined()
  })

  it.each([
    [{ PORT: 'eighty' }, 'PORT'],
    [{ RATE_LIMIT_MAX: '-1' }, 'RATE_LIMIT_MAX'],
    [{ RATE_LIMIT_WINDOW: '0' }, 'RATE_LIMIT_WINDOW'],
    [{ MAINTENANCE_MODE: 'maybe' }, 'MAINTENANCE_MODE'],
    [{ WS_SOCKETS_PER_CALLER: '-1' }, 'WS_SOCKETS_PER_CALLER'],
    [{ PORT: '70000' }, 'PORT'],
    [{ DATABASE_URL: 'mysql://db' }, 'DATABASE_URL'],
    [{ JWT_SECRET: 'short' }, 'JWT_SECRET'],
    [{ ACCESS_TOKEN_TTL: '0' }, 'ACCESS_TOKEN_TTL'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ ADMIN_EMAIL: 'root@example.com' }, 'ADMIN_PASSWORD'],
    [{ NODE_ENV: 'production' }, 'JWT_SECRET'],
  ])('rejects %o, naming %s', (environment, variable) => {
    expect(() => loadConfig(environment)).toThrow(ConfigError)
    expect(() => loadConfig(environment)).toThrow(variable)
  })
})
