import { type SQL, sql } from 'drizzle-orm'
import type { Database } from '../../src/db/database.js'
import { rowsOf } from '../../src/db/statement-rows.js'

async function byCategory(db: Database, query: SQL): Promise<Record<string, number>> {
  return Object.fromEntries(
    rowsOf<{ category: string; live: number }>(await db.execute(query))
      .filter((row) => Number(row.live) !== 0)
      .map((row) => [row.category, Number(row.live)]),
  )
}

/** The live products of each category as the counts kept by the triggers say. */
export const keptCounts = (db: Database) =>
  byCategory(db, sql`select category, sum(live) as live from product_counts group by category`)

/** The live products of each category, counted. */
export const countedProducts = (db: Database) =>
  byCategory(
    db,
    sql`select category, count(*) as live from products where deleted_at is null group by category`,
  )
