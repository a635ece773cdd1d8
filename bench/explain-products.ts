import { sql } from 'drizzle-orm'
import { rowsOf } from '../src/db/statement-rows.js'
import { createProductsRepository } from '../src/domains/catalog/products-repository.js'
import { openBenchDatabase, seedProducts } from './seed.js'

// `npm run explain -- [count]`: EXPLAIN ANALYZE of the catalog's list and read queries on
// `count` seeded products, in a fresh in-memory PGlite or, with DATABASE_URL, in Postgres.
const count = Number(process.argv[2] ?? 100_000)
const database = await openBenchDatabase()
const { db } = database
await db.execute(sql`truncate products restart identity cascade`)
await seedProducts(db, count)
const products = createProductsRepository(db)

const cases = {
  'unfiltered list, page 1': products.listPageQuery({}, { page: 1, limit: 10 }),
  'unfiltered list, page 50': products.listPageQuery({}, { page: 50, limit: 10 }),
  'filtered list (category, price range, search)': products.listPageQuery(
    { category: 'category-10', minPrice: 100, maxPrice: 500, search: 'oak' },
    { page: 1, limit: 10 },
  ),
  'category and price range': products.listPageQuery(
    { category: 'category-10', minPrice: 100, maxPrice: 500 },
    { page: 3, limit: 10 },
  ),
  'search alone': products.listPageQuery({ search: 'e4da3b' }, { page: 1, limit: 10 }),
  'read by id': db
    .select()
    .from((await import('../src/db/schema.js')).products)
    .where(sql`id = ${count / 2}`),
}

console.log(`${database.kind}, ${count} products\n`)
for (const [name, query] of Object.entries(cases)) {
  // Warm up, then the plan of the sixth run: a cached generic plan would show here.
  for (let run = 0; run < 5; run += 1) await query
  const result = await db.execute(sql`explain (analyze, costs off) ${query}`)
  const rows = rowsOf<Record<string, string>>(result)
  console.log(`## ${name}\n${rows.map((row) => Object.values(row)[0]).join('\n')}\n`)
}
await database.close()
