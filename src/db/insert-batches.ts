import { type SQL, sql } from 'drizzle-orm'
import { isDataError } from './errors.js'

/** Writes every input given in one statement, answering their rows in the inputs' order. */
export type InsertAll<Input, Row> = (inputs: readonly Input[]) => Promise<Row[]>

/** The name of the parameter that carries a batch's rows. */
const GIVEN = 'given'

/**
 * The rows of a batch as a table a statement reads, named `given`: the `columns` defined
 * (`name text, …`, named as the inputs' fields) and `ordinality`, each row's place in the
 * batch. They arrive as a JSON array in one parameter, so the statement's text is the same
 * whatever their number and is prepared once; a text parameter, which each driver sends as
 * it is, where a json one would be serialized by one driver and not by the other.
 */
export const givenRows = (columns: SQL) =>
  sql`rows from (json_to_recordset(${sql.placeholder(GIVEN)}::text::json) as (${columns}))
    with ordinality as given`

/** The values of a statement that reads its rows from givenRows. */
export const givenValues = (inputs: readonly unknown[]) => ({ [GIVEN]: JSON.stringify(inputs) })

/** The most rows one statement writes; more in a turn go out in several. */
const MAX_BATCH = 100

interface Waiting<Input, Row> {
  input: Input
  resolve(row: Row): void
  reject(error: unknown): void
}

/**
 * Inserts asked for one at a time, written together: those asked for in one turn of the
 * event loop go out at its end as one statement. Under load a statement, its commit and
 * its flush of the log cost Postgres far more than a row does (measured with pgbench:
 * bench/MEASUREMENTS.md), and each statement is a round trip of system
 * calls on both ends. A lone insert waits for nothing but the end of its own turn.
 *
 * The rows of a batch commit together. A batch that a row's values broke (a constraint, a
 * value out of range) is written again one row at a time, so each insert gets its own
 * answer and one bad row fails no other; any other failure (the database away, out of
 * time) is every insert's.
 *
 * `oneAtATime`: the next batch waits for the one being written, and takes what came
 * meanwhile (up to MAX_BATCH), for inserts that hold a lock of their scope to their commit
 * (ordered-scopes.ts). Batches written at once would queue on each other's locks, each
 * holding a connection and committing alone; one at a time, they grow with the load instead.
 */
export function batchedInserts<Input, Row>(
  insertAll: InsertAll<Input, Row>,
  { oneAtATime = false }: { oneAtATime?: boolean } = {},
): (input: Input) => Promise<Row> {
  let waiting: Waiting<Input, Row>[] = []
  let writing = false

  function flush() {
    if (oneAtATime) return writeNext()
    const batch = waiting
    waiting = []
    for (let start = 0; start < batch.length; start += MAX_BATCH) {
      void write(batch.slice(start, start + MAX_BATCH))
    }
  }

  function writeNext() {
    if (writing || waiting.length === 0) return
    writing = true
    void write(waiting.splice(0, MAX_BATCH)).finally(() => {
      writing = false
      writeNext()
    })
  }

  async function write(batch: readonly Waiting<Input, Row>[]): Promise<void> {
    try {
      const rows = await insertAll(batch.map(({ input }) => input))
      if (rows.length !== batch.length) {
        throw new Error(`${batch.length} rows inserted, ${rows.length} returned`)
      }
      for (const [index, { resolve }] of batch.entries()) resolve(rows[index] as Row)
    } catch (error) {
      if (batch.length > 1 && isDataError(error)) {
        for (const each of batch) await write([each])
      } else {
        for (const { reject } of batch) reject(error)
      }
    }
  }

  return (input) =>
    new Promise<Row>((resolve, reject) => {
      if (waiting.length === 0 && !writing) setImmediate(flush)
      waiting.push({ input, resolve, reject })
    })
}
