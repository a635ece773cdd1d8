import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import type { Logger } from 'drizzle-orm'
import postgres from 'postgres'
import { inject } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { openDatabase } from '../../src/db/client.js'
import type { DatabaseHandle } from '../../src/db/database.js'
import { openPglite } from '../../src/db/pglite.js'

export interface TestDatabase {
  database: DatabaseHandle
  /** The URL of the fresh Postgres database, for tests that connect on their own. */
  url?: string
  /**
   * The REDIS_KEY_PREFIX of servers over this database: ids repeat from one test database
   * to the next, and Redis is shared by every suite.
   */
  redisKeyPrefix: string
  /** Closes the handle and throws the database away. */
  drop(): Promise<void>
}

export interface OpenSettings {
  /** Longer statements than the service's own, for fixtures that seed in bulk. */
  databaseTimeoutMs?: number
  /** Told of every statement drizzle sends on the handle (tests count them). */
  logger?: Logger
}

export interface Backend {
  name: 'pglite' | 'postgres'
  /**
   * A fresh, migrated database that no other test file sees, with the service's own
   * settings unless a fixture needs longer statements (seeding in bulk).
   */
  open(settings?: OpenSettings): Promise<TestDatabase>
}

const postgresUrl = process.env.TEST_DATABASE_URL
if (process.env.CI === 'true' && !postgresUrl) {
  throw new Error('CI runs the Postgres suites: set TEST_DATABASE_URL')
}

/** The service's own database settings, as a start without configuration gets them. */
const defaults = loadConfig({})

let migratedTemplate: Promise<Blob> | undefined

/** The run's migrated embedded database (global-setup.ts), read once per test file. */
function pgliteTemplate() {
  migratedTemplate ??= readFile(inject('pgliteTemplatePath')).then((bytes) => new Blob([bytes]))
  return migratedTemplate
}

const pglite: Backend = {
  name: 'pglite',
  async open(settings) {
    const database = await openPglite('memory://', settings?.logger, await pgliteTemplate())
    return {
      database,
      redisKeyPrefix: `test-${randomBytes(6).toString('hex')}:`,
      drop: () => database.close(),
    }
  },
}

function postgresBackend(adminUrl: string): Backend {
  return {
    name: 'postgres',
    async open(settings) {
      // Named after the run's template, so that the run's end finds every one (global-setup.ts).
      const template = inject('postgresTemplate')
      const name = `${template}_${randomBytes(6).toString('hex')}`
      const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
      await admin.unsafe(`create database ${name} template ${template}`)
      const url = new URL(adminUrl)
      url.pathname = `/${name}`
      const database = await openDatabase({
        ...defaults,
        databaseTimeoutMs: settings?.databaseTimeoutMs ?? defaults.databaseTimeoutMs,
        logger: settings?.logger,
        databaseUrl: url.href,
      })
      return {
        database,
        url: url.href,
        redisKeyPrefix: `${name}:`,
        async drop() {
          await database.close()
          // Not awaited: DROP DATABASE waits on the whole cluster (an immediate checkpoint,
          // then every session of every database letting go of the files), so a suite's
          // drop could wait out another suite's stalled connections (once, 60 s in CI).
          // global-setup.ts drops what is left when the run ends.
          admin
            .unsafe(`drop database if exists ${name} with (force)`)
            .catch(() => {})
            .finally(() => admin.end())
        },
      }
    },
  }
}

/** Every suite runs on PGlite, and on real Postgres when TEST_DATABASE_URL is set. */
export const backends: Backend[] = postgresUrl ? [pglite, postgresBackend(postgresUrl)] : [pglite]
