import { fillPlaceholders } from 'drizzle-orm'
import type { Sql } from 'postgres'
import type { Database } from './database.js'

/** The rows of `db.execute`: postgres.js answers them as an array, PGlite in `rows`. */
export function rowsOf<Row>(result: unknown): Row[] {
  return (Array.isArray(result) ? result : (result as { rows: Row[] }).rows) as Row[]
}

/** The driver under drizzle: postgres.js, or PGlite. */
type Driver = PostgresDriver | PgliteDriver
interface PostgresDriver {
  unsafe(text: string, params: unknown[], options: { prepare: boolean }): PromiseLike<unknown[]>
  begin(statements: (transaction: Pick<PostgresDriver, 'unsafe'>) => unknown): Promise<unknown>
}
interface PgliteDriver {
  query(text: string, params: unknown[]): Promise<{ rows: unknown[] }>
  transaction<T>(work: (transaction: Pick<PgliteDriver, 'query'>) => Promise<T>): Promise<T>
}

/** A built statement, run with the values of its placeholders, answering the driver's rows. */
export type RowsOf<Row> = (values: Record<string, unknown>) => Promise<Row[]>
type Buildable = { toSQL(): { sql: string; params: unknown[] } }

/**
 * A statement that runs often (a read, or a write that returns rows), built by drizzle
 * from the schema once, prepared, and answered as the driver's rows: keyed by the
 * columns' aliases, valued as the driver reads them. Drizzle's mapping of every row, field
 * by field, and its prepared-statement session were a part of every list's and every
 * sendMessage's CPU.
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

/**
 * Statements built once and run in order in one transaction, answering the last one's
 * rows: for a statement that must see what committed while an earlier one of the
 * transaction waited (for a lock), which one statement cannot, its snapshot being taken
 * as it starts. On Postgres they are prepared, as prepareRows' are, and sent together
 * between BEGIN and COMMIT, so they cost two round trips more than one statement, not
 * one per statement more.
 */
export function preparedTransaction<Row>(db: Database, queries: readonly Buildable[]): RowsOf<Row> {
  const statements = queries.map((query) => query.toSQL())
  const carrier = db as unknown as DriverCarrier
  const driver = carrier[preparedStatementsDriver] || carrier.$client
  if ('query' in driver) {
    return (values) =>
      driver.transaction(async (transaction) => {
        let rows: unknown[] = []
        for (const { sql: text, params } of statements) {
          rows = (await transaction.query(text, fillPlaceholders(params, values))).rows
        }
        return rows as Row[]
      })
  }
  return async (values) => {
    const answers = (await driver.begin((transaction) =>
      statements.map(({ sql: text, params }) =>
        transaction.unsafe(text, fillPlaceholders(params, values), { prepare: true }),
      ),
    )) as Row[][]
    return answers.at(-1) ?? []
  }
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
