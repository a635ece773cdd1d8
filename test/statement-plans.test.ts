import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../src/db/database.js'
import { prepareRows, unnamedRows } from '../src/db/statement-rows.js'
import { backends, type TestDatabase } from './helpers/backends.js'

type Mode = { mode: string }

/** The session's plan_cache_mode, read by a statement of the given kind. */
const modeQuery = (db: Database) =>
  db
    .select({ mode: sql<string>`current_setting('plan_cache_mode')`.as('mode') })
    .from(sql`(select 1) as one`)

/**
 * The fixed statements (prepareRows) are written for generic plans and must keep one: left
 * to choose, Postgres planned the chat list anew at every call. The lists (unnamedRows)
 * and drizzle's own statements must still be planned for their values.
 */
describe.each(backends)('where statements are planned, on $name', (backend) => {
  let testDatabase: TestDatabase

  beforeAll(async () => {
    testDatabase = await backend.open()
  })
  afterAll(() => testDatabase?.drop())

  // PGlite is one session, so it plans the prepared statements as Postgres chooses.
  const prepared = backend.name === 'postgres' ? 'force_generic_plan' : 'auto'

  it(`runs the prepared statements with plan_cache_mode ${prepared}`, async () => {
    const { db } = testDatabase.database
    const [row] = await prepareRows<Mode>(db, modeQuery(db))({})
    expect(row?.mode).toBe(prepared)
  })

  it('plans the lists and drizzle’s own statements for their values', async () => {
    const { db } = testDatabase.database
    const [unnamed] = await unnamedRows<Mode>(db, modeQuery(db))({})
    expect(unnamed?.mode).toBe('auto')
    const [own] = await modeQuery(db)
    expect(own?.mode).toBe('auto')
  })
})
