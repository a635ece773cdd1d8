import type { Logger } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/postgres-js'
import { migrate } from 'drizzle-orm/postgres-js/migrator'
import postgres from 'postgres'
import { migrationsPath } from '../paths.js'
import type { Database, DatabaseHandle } from './database.js'
import { withDeadlines } from './deadlines.js'
import { PLANNER_SETTINGS, PREPARED_SETTINGS } from './planner-settings.js'
import * as schema from './schema.js'
import { silenceWatchedSockets } from './silence-watch.js'
import { withPreparedStatementsOn } from './statement-rows.js'
import { type StatementSpans, withStatementSpans } from './statement-spans.js'

// Any constant shared by every instance: they take turns migrating.
const MIGRATION_LOCK = 72_817_311
/** What the client waits beyond the server's statement_timeout before giving up itself. */
const DEADLINE_GRACE_MS = 1000

/**
 * Seconds before reconnecting after a failure: short, so service resumes within about a
 * second of the database's return (the driver's own backoff grows to 20 s), jittered so
 * instances do not reconnect in step.
 */
const reconnectDelay = (failures: number) =>
  Math.min(0.05 * 2 ** failures, 0.5) * (0.5 + Math.random() / 2)

const connectionOptions = (timeoutMs: number) => ({
  onnotice: () => {},
  connect_timeout: Math.ceil(timeoutMs / 1000),
  backoff: reconnectDelay,
})

/** Connections of each pool: the one drizzle runs on, and the prepared statements' own. */
const POOL_SIZE = 10

export async function openPostgres(
  url: string,
  timeoutMs: number,
  logger?: Logger,
  { statementSpans }: { statementSpans?: StatementSpans | undefined } = {},
): Promise<DatabaseHandle> {
  const pool = openPool(url, timeoutMs, PLANNER_SETTINGS)
  const preparedPool = openPool(url, timeoutMs, PREPARED_SETTINGS)
  const traced = (sql: postgres.Sql) =>
    statementSpans ? withStatementSpans(sql, statementSpans) : sql
  const client = traced(pool)
  const preparedClient = traced(preparedPool)
  const db = drizzle({ client, schema, ...(logger && { logger }) })
  return {
    kind: 'postgres',
    db: withPreparedStatementsOn(db as unknown as Database, preparedClient),
    migrate: () => migrateWithLock(url, timeoutMs),
    ping: async () => {
      await db.execute('select 1')
    },
    // Queries still running get two seconds; a shutdown must finish in bounded time.
    close: async () => {
      await Promise.all([pool.end({ timeout: 2 }), preparedPool.end({ timeout: 2 })])
    },
  }
}

function openPool(url: string, timeoutMs: number, settings: Record<string, string>): postgres.Sql {
  const deadlineMs = timeoutMs + DEADLINE_GRACE_MS
  const pool = postgres(url, {
    ...connectionOptions(timeoutMs),
    max: POOL_SIZE,
    connection: { ...settings, statement_timeout: timeoutMs },
    socket: silenceWatchedSockets(deadlineMs),
    // No query of postgres.js's own on each new connection (the array types, which no
    // column here has): cut short by the watch, its rejection would go unhandled.
    fetch_types: false,
    // postgres.js documents `socket` but leaves it out of its types.
  } as postgres.Options<Record<string, never>>)
  // Through TLS the watch sees nothing: each statement then gets a deadline of its own.
  return pool.options.ssl ? withDeadlines(pool, deadlineMs) : pool
}

async function migrateWithLock(url: string, timeoutMs: number): Promise<void> {
  const client = postgres(url, { ...connectionOptions(timeoutMs), max: 1 })
  try {
    await client`select pg_advisory_lock(${MIGRATION_LOCK})`
    await migrate(drizzle({ client }), { migrationsFolder: migrationsPath })
  } finally {
    await client.end({ timeout: 5 })
  }
}
