import type { Logger } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/postgres-js'
import { migrate } from 'drizzle-orm/postgres-js/migrator'
import postgres from 'postgres'
import type { ReplicaTarget } from '../config.js'
import { migrationsPath } from '../paths.js'
import type { Database, DatabaseHandle } from './database.js'
import { withDeadlines } from './deadlines.js'
import { PLANNER_SETTINGS, PREPARED_SETTINGS } from './planner-settings.js'
import { createReadReplica, type ProbeAnswer, type ReadReplica } from './read-replica.js'
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

export interface PostgresOptions {
  statementSpans?: StatementSpans | undefined
  /** A streaming replica for the reads that may go to one (see read-replica.ts). */
  replica?: ReplicaTarget | undefined
}

export async function openPostgres(
  url: string,
  timeoutMs: number,
  logger?: Logger,
  { statementSpans, replica }: PostgresOptions = {},
): Promise<DatabaseHandle> {
  const pool = openPool(url, timeoutMs, PLANNER_SETTINGS)
  const preparedPool = openPool(url, timeoutMs, PREPARED_SETTINGS)
  const traced = (sql: postgres.Sql) =>
    statementSpans ? withStatementSpans(sql, statementSpans) : sql
  const client = traced(pool)
  const preparedClient = traced(preparedPool)
  const db = drizzle({ client, schema, ...(logger && { logger }) })
  const readReplica = replica && openReplica(replica, timeoutMs, traced, logger)
  return {
    kind: 'postgres',
    db: withPreparedStatementsOn(db as unknown as Database, preparedClient),
    ...(readReplica && { replica: readReplica }),
    // The primary's URL only: the replica is never given to the migrator.
    migrate: () => migrateWithLock(url, timeoutMs),
    ping: async () => {
      await db.execute('select 1')
    },
    // Queries still running get two seconds; a shutdown must finish in bounded time.
    close: async () => {
      await Promise.all([
        pool.end({ timeout: 2 }),
        preparedPool.end({ timeout: 2 }),
        readReplica?.close(),
      ])
    },
  }
}

/**
 * The replica's pool, where its reads run (their prepared statements too: a standby
 * plans them as the primary would, and a pool of its own for them would double its
 * connections), and one connection more for the probe, which so measures the replica
 * and not this pool's queue.
 */
function openReplica(
  { url, maxLagMs }: ReplicaTarget,
  timeoutMs: number,
  traced: (sql: postgres.Sql) => postgres.Sql,
  logger: Logger | undefined,
): ReadReplica {
  const pool = openPool(url, timeoutMs, PLANNER_SETTINGS)
  const probeClient = openPool(url, timeoutMs, PLANNER_SETTINGS, 1)
  const db = drizzle({ client: traced(pool), schema, ...(logger && { logger }) })
  return createReadReplica({
    db: db as unknown as Database,
    maxLagMs,
    probe: () => probeReplica(probeClient),
    closeConnections: async () => {
      await Promise.all([pool.end({ timeout: 2 }), probeClient.end({ timeout: 2 })])
    },
  })
}

/**
 * The replay lag: none when the WAL receiver runs and everything it received is
 * replayed; otherwise the age of the last transaction replayed (a paused replay with WAL
 * pending lags). Without a WAL receiver (the primary out of the replica's reach), having
 * replayed all that arrived says nothing of what the primary has committed since.
 */
async function probeReplica(client: postgres.Sql): Promise<ProbeAnswer> {
  const [answer] = await client<ProbeAnswer[]>`
    select pg_is_in_recovery() as standby,
      (case
        when pg_last_wal_replay_lsn() >= pg_last_wal_receive_lsn()
          and exists (select from pg_stat_wal_receiver) then 0
        else extract(epoch from now() - pg_last_xact_replay_timestamp()) * 1000
      end)::float8 as "lagMs"`
  if (!answer) throw new Error('the probe got no row')
  return answer
}

function openPool(
  url: string,
  timeoutMs: number,
  settings: Record<string, string>,
  max = POOL_SIZE,
): postgres.Sql {
  const deadlineMs = timeoutMs + DEADLINE_GRACE_MS
  const pool = postgres(url, {
    ...connectionOptions(timeoutMs),
    max,
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
