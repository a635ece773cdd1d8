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
    })
    expect(config).toMatchObject({
      port: 8080,
      host: '0.0.0.0',
      dataDir: '/var/lib/service',
      databaseUrl: 'postgres://db/service',
      logLevel: 'debug',
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
    [{ PORT: 'eighty' }, 'PORT'],
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
