import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../src/db/database.js'
import { isDataError } from '../src/db/errors.js'
import { rowsOf } from '../src/db/statement-rows.js'
import { createProductsRepository } from '../src/domains/catalog/products-repository.js'
import { backends, type TestDatabase } from './helpers/backends.js'
import { countedProducts, keptCounts } from './helpers/product-counts.js'

// The per-category counts behind the lists' totals, under statements that write many
// products at once, as an operator's bulk change or a restore would.
describe.each(backends)('product counts on $name', (backend) => {
  let testDatabase: TestDatabase
  let db: Database

  beforeAll(async () => {
    testDatabase = await backend.open()
    db = testDatabase.database.db
  })
  afterAll(() => testDatabase?.drop())

  const kept = () => keptCounts(db)
  const counted = () => countedProducts(db)

  it('agree with the products after inserts, updates and deletes of many rows at once', async () => {
    await db.execute(sql`
      insert into products (name, price, category, stock)
      select 'Bulk ' || i, 1 + i % 50, 'bulk-' || (i % 7), i % 10
      from generate_series(1, 3000) as i`)
    expect(await kept()).toEqual(await counted())
    expect((await kept())['bulk-3']).toBe(429)

    await db.execute(
      sql`update products set deleted_at = now() where name like 'Bulk %' and stock < 3`,
    )
    await db.execute(sql`update products set category = 'bulk-moved' where price < 10`)
    await db.execute(sql`update products set stock = stock + 1`)
    await db.execute(sql`update products set deleted_at = null where stock = 1`)
    expect(await kept()).toEqual(await counted())

    await db.execute(sql`delete from products where name like 'Bulk %' and price > 30`)
    expect(await kept()).toEqual(await counted())
    await db.execute(sql`delete from products where name like 'Bulk %'`)
    expect(await kept()).toEqual(await counted())
  })

  it('agree with the products after creates written together, one of them refused', async () => {
    const repository = createProductsRepository(db)
    const given = [
      { name: 'Batched "one", \\ with quotes', price: 1.25, category: 'batched-a', stock: 1 },
      { name: 'Batched two', price: 2, category: 'batched-b' },
      { name: 'Refused', price: -1, category: 'batched-a', stock: 1 },
      { name: 'Batched ünïcode 📦', price: 3.5, category: 'batched-a', stock: 0 },
    ]
    const outcomes = await Promise.allSettled(given.map((product) => repository.insert(product)))

    const refused = outcomes[2] as PromiseRejectedResult
    expect(isDataError(refused.reason)).toBe(true)
    const created = outcomes
      .filter((outcome) => outcome.status === 'fulfilled')
      .map((outcome) => outcome.value.product)
    expect(created).toMatchObject([
      { name: given[0]?.name, price: 1.25, category: 'batched-a', stock: 1, deletedAt: null },
      { name: 'Batched two', price: 2, category: 'batched-b', stock: 0 },
      { name: given[3]?.name, price: 3.5, category: 'batched-a', stock: 0 },
    ])
    for (const product of created) {
      expect(await repository.findById(product.id)).toEqual(product)
    }
    const refusedRows = await db.execute(sql`select id from products where name = 'Refused'`)
    expect(rowsOf(refusedRows)).toEqual([])
    expect(await kept()).toEqual(await counted())
    expect((await kept())['batched-a']).toBe(2)
  })

  it('are kept once per statement, not once per row', async () => {
    const calls = await db.transaction(async (tx) => {
      await tx.execute(sql`set local track_functions = 'pl'`)
      await tx.execute(sql`
        insert into products (name, price, category, stock)
        select 'Counted ' || i, 5, 'counted-' || (i % 3), 1 from generate_series(1, 200) as i`)
      await tx.execute(sql`update products set deleted_at = now() where name like 'Counted %'`)
      return rowsOf<{ calls: number }>(
        await tx.execute(
          sql`select coalesce(sum(calls), 0)::int as calls from pg_stat_xact_user_functions`,
        ),
      )[0]?.calls
    })
    expect(calls).toBe(2)
    expect(await kept()).toEqual(await counted())
  })
})
