import { drizzle } from 'drizzle-orm/postgres-js'
import { migrate } from 'drizzle-orm/postgres-js/migrator'
import postgres from 'postgres'
import { type Database, type DatabaseHandle, migrationsFolder, PLANNER_SETTINGS } from './client.js'
import * as schema from './schema.js'

// Any constant shared by every instance: they take turns migrating.
const MIGRATION_LOCK = 72_817_311

export async function openPostgres(url: string): Promise<DatabaseHandle> {
  const client = postgres(url, {
    max: 10,
    onnotice: () => {},
    connection: PLANNER_SETTINGS,
  })
  const db = drizzle({ client, schema })
  return {
    kind: 'postgres',
    db: db as unknown as Database,
    migrate: () => migrateWithLock(url),
    ping: async () => {
      await client`select 1`
    },
    close: () => client.end({ timeout: 5 }),
  }
}

async function migrateWithLock(url: string): Promise<void> {
  const client = postgres(url, { max: 1, onnotice: () => {} })
  try {
    await client`select pg_advisory_lock(${MIGRATION_LOCK})`
    await migrate(drizzle({ client }), { migrationsFolder })
  } finally {
    await client.end({ timeout: 5 })
  }
}
