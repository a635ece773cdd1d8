import { sql } from 'drizzle-orm'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/client.js'
import type { Database } from '../src/db/database.js'
import type { StatementSpans } from '../src/db/statement-spans.js'

/**
 * The database a benchmark seeds and measures, migrated: DATABASE_URL's Postgres, or an
 * in-memory PGlite. Seeding a million rows is one long statement by design, so its
 * statements may run far longer than the service lets them.
 */
export async function openBenchDatabase(statementSpans?: StatementSpans) {
  const config = loadConfig({
    DATABASE_URL: process.env.DATABASE_URL,
    DATA_DIR: 'memory://',
    DATABASE_TIMEOUT: '600000',
  })
  const database = await openDatabase({ ...config, statementSpans })
  await database.migrate()
  return database
}

const BATCH = 100_000

/**
 * Products number `from` to `to` (1 to `to` by default), spread over 50 categories,
 * prices 1.00 to 1000.99 and names built from five materials plus a hash, each created
 * one second after the one before: a larger catalog is the smaller one and more.
 */
export async function seedProducts(db: Database, to: number, from = 1): Promise<void> {
  await db.transaction(async (tx) => {
    for (let first = from; first <= to; first += BATCH) {
      await tx.execute(sql`
        insert into products (name, price, category, stock, created_at)
        select
          'Product ' || (array['oak', 'pine', 'steel', 'glass', 'linen'])[1 + i % 5] || ' ' || md5(i::text),
          round((1 + (i::bigint * 7919 % 100000) / 100.0)::numeric, 2),
          'category-' || (i % 50),
          i % 100,
          timestamptz '2026-01-01' + make_interval(secs => i)
        from generate_series(${first}::int, ${Math.min(to, first + BATCH - 1)}::int) as i`)
    }
  })
  await db.execute(sql`vacuum analyze products`)
  await db.execute(sql`vacuum analyze product_counts`)
}

/**
 * A history of `count` messages in the chat `messages` lists by default, so that (f)
 * reads a full page, as the peer suite's chat of 1,100 does, rather than an empty chat.
 */
export async function seedMessages(db: Database, count: number): Promise<void> {
  await db.execute(sql`
    insert into messages (chat_id, text, author, created_at)
    select 'general', 'Bench message ' || i, 'bench', timestamptz '2026-01-01' + make_interval(secs => i)
    from generate_series(1, ${count}::int) as i`)
  await db.execute(sql`vacuum analyze messages`)
}
