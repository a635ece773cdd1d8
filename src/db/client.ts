import { fillPlaceholders, type Logger } from 'drizzle-orm'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import type { Sql } from 'postgres'
import { migrationsPath } from '../paths.js'
import type * as schema from './schema.js'

export type Database = PgDatabase<PgQueryResultHKT, typeof schema>
export type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0]
/** What repository methods run on: the database, or a transaction a service opened. */
export type Executor = Database | Transaction

/** The rows of `db.execute`: postgres.js answers them as an array, PGlite in `rows`. */
export function rowsOf<Row>(result: unknown): Row[] {
  return (Array.isArray(result) ? result : (result as { rows: Row[] }).rows) as Row[]
}

/** The driver under drizzle: postgres.js, or PGlite. */
type Driver =
  | {
      unsafe(text: string, params: unknown[], options: { prepare: boolean }): PromiseLike<unknown[]>
    }
  | { query(text: string, params: unknown[]): Promise<{ rows: unknown[] }> }

/** A built statement, run with the values of its placeholders, answering the driver's rows. */
export type RowsOf<Row> = (values: Record<string, unknown>) => Promise<Row[]>
type Buildable = { toSQL(): { sql: string; params: unknown[] } }

/**
 * A statement that runs often (a read, or a write that returns rows), built by drizzle
 * from the schema once, prepared, and answered as the driver's rows: keyed by the
 * columns' aliases, valued as the driver reads them. Drizzle's mapping of every row, field
 * by field, was a tenth of the CPU of a list of 50, and its prepared-statement session 4%
 * of a sendMessage's.
 */
export function prepareRows<Row>(db: Database, query: Buildable): RowsOf<Row> {
  return statementRows(db, query, true)
}

/**
 * As prepareRows, but sent unnamed each time, so Postgres plans it for the values it is
 * sent with rather than settling on a generic plan (see PLANNER_SETTINGS).
 */
export function unnamedRows<Row>(db: Database, query: Buildable): RowsOf<Row> {
  return statementRows(db, query, false)
}

/**
 * Where prepareRows runs its statements when not on the database's own driver: on
 * Postgres, a pool of its own that plans each of them once (see PREPARED_SETTINGS).
 */
const preparedStatementsDriver = Symbol('preparedStatementsDriver')

type DriverCarrier = { $client: Driver; [preparedStatementsDriver]?: Driver }

/** The database, with prepareRows' statements run on `pool`. */
export function withPreparedStatementsOn(db: Database, pool: Sql): Database {
  return Object.assign(db, { [preparedStatementsDriver]: pool as unknown as Driver })
}

function statementRows<Row>(db: Database, query: Buildable, prepare: boolean): RowsOf<Row> {
  const { sql: text, params } = query.toSQL()
  const carrier = db as unknown as DriverCarrier
  const driver = (prepare && carrier[preparedStatementsDriver]) || carrier.$client
  if ('query' in driver) {
    return async (values) =>
      (await driver.query(text, fillPlaceholders(params, values))).rows as Row[]
  }
  // Made and awaited in one function, the query lets its rows die young (see silence-watch.ts).
  return async (values) => {
    const rows = await driver.unsafe(text, fillPlaceholders(params, values), { prepare })
    return rows as Row[]
  }
}

export interface DatabaseHandle {
  readonly kind: 'pglite' | 'postgres'
  readonly db: Database
  /** Applies pending migrations; safe when several instances start at once. */
  migrate(): Promise<void>
  ping(): Promise<void>
  close(): Promise<void>
}

export interface DatabaseSettings {
  /** A postgres:// URL; without it the embedded PGlite is used. */
  databaseUrl?: string | undefined
  /** PGlite's directory, or `memory://` for a database that lives only in this process. */
  dataDir: string
  /** Statement timeout and the wait for an answer, on Postgres (see Config). */
  databaseTimeoutMs: number
  /** Told of every statement drizzle sends (tests count them). */
  logger?: Logger | undefined
}

/**
 * Session settings of every connection, on both drivers.
 *
 * No plan_cache_mode: a list statement must be planned for its values (a generic plan
 * cannot use the trigram or price indexes for them, measured five times slower), and it
 * is, being sent unnamed; so are drizzle's other statements, which Postgres plans for
 * their values until a generic plan looks as cheap.
 */
export const PLANNER_SETTINGS = {
  // Pages sit in memory or on SSD, where a random read costs about a sequential one;
  // at the default 4 the planner counts the list's total with a scan of the table
  // instead of an index-only scan.
  random_page_cost: '1.1',
}

/**
 * The sessions prepareRows' statements run in, on Postgres: each is planned once, for any
 * values, and the plan kept. Left to choose, Postgres planned the chat list anew at every
 * call, because a plan for the chat at hand looked cheaper than one for any chat; that
 * planning was over a quarter of Postgres's CPU for a list of 50. The generic plans are
 * the ones these statements are written for (messages-plans.test.ts checks the chat
 * list's).
 */
export const PREPARED_SETTINGS = { ...PLANNER_SETTINGS, plan_cache_mode: 'force_generic_plan' }

export const migrationsFolder = migrationsPath

export async function openDatabase(settings: DatabaseSettings): Promise<DatabaseHandle> {
  if (settings.databaseUrl) {
    const { openPostgres } = await import('./postgres.js')
    return openPostgres(settings.databaseUrl, settings.databaseTimeoutMs, settings.logger)
  }
  const { openPglite } = await import('./pglite.js')
  return openPglite(settings.dataDir, settings.logger)
}
