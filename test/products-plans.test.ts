import { sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { seedProducts } from '../bench/seed.js'
import type { Database } from '../src/db/database.js'
import * as schema from '../src/db/schema.js'
import { products } from '../src/db/schema.js'
import {
  createProductsRepository,
  type ProductsRepository,
} from '../src/domains/catalog/products-repository.js'
import { type Backend, backends, type TestDatabase } from './helpers/backends.js'
import { type PlanNode, planNodesOf } from './helpers/plans.js'
import { countedProducts, keptCounts } from './helpers/product-counts.js'

// The plans the planner picks on 100k products, checked by their shape, never by time.
describe.each(backends)('query plans on 100k products on $name', (backend) => {
  let testDatabase: TestDatabase
  let repository: ProductsRepository

  const scansOf = async (query: Parameters<typeof planNodesOf>[1]) =>
    (await planNodesOf(testDatabase.database.db, query)).filter(
      (node) => node['Relation Name'] !== undefined,
    )
  const on = (scans: PlanNode[], table: string) =>
    scans.filter((scan) => scan['Relation Name'] === table)
  const searchesIn = (nodes: PlanNode[]) =>
    nodes.filter((node) => node['Index Name'] === 'products_live_category_name_trgm_idx')

  // One statement seeds 100k rows: longer than the service lets a statement run, and on
  // PGlite, with the other suites running beside it in CI, up to two minutes and more.
  const SEEDING_MS = 300_000
  beforeAll(async () => {
    testDatabase = await backend.open({ databaseTimeoutMs: SEEDING_MS })
    await seedProducts(testDatabase.database.db, 100_000)
    repository = createProductsRepository(testDatabase.database.db)
  }, SEEDING_MS)
  afterAll(() => testDatabase?.drop())

  it('starts from a seed whose per-category counts agree with its products', async () => {
    const counted = await countedProducts(testDatabase.database.db)
    expect(Object.keys(counted)).toHaveLength(50)
    expect(await keptCounts(testDatabase.database.db)).toEqual(counted)
  })

  it.each([
    ['the unfiltered list', {}],
    ['a list by category', { category: 'category-7' }],
  ])('serves %s from an index, and its total from the per-category counts', async (_, filters) => {
    const scans = await scansOf(repository.listPageQuery(filters, { page: 3, limit: 10 }))
    const [page, ...others] = on(scans, 'products')
    expect(others).toEqual([])
    expect(page?.['Node Type']).not.toBe('Seq Scan')
    expect(on(scans, 'product_counts')).toHaveLength(1)
  })

  it.each([
    ['a list by price range', { minPrice: 100, maxPrice: 100.5 }],
    ['a list by search', { search: 'e4da3b' }],
    [
      'a list by every filter',
      { category: 'category-10', minPrice: 100, maxPrice: 500, search: 'oak' },
    ],
  ])('serves %s, its page and its total, from indexes', async (_, filters) => {
    const scans = on(
      await scansOf(repository.listPageQuery(filters, { page: 3, limit: 10 })),
      'products',
    )
    expect(scans).toHaveLength(2)
    for (const scan of scans) expect(scan['Node Type']).not.toBe('Seq Scan')
  })

  it.each([
    ['a category and price range', { category: 'category-10', minPrice: 100, maxPrice: 500 }],
    [
      'a search within them',
      { category: 'category-10', minPrice: 100, maxPrice: 500, search: 'oak' },
    ],
  ])('counts the matches of %s from an index alone, reading no table rows', async (_, filters) => {
    const scans = on(
      await scansOf(repository.listPageQuery(filters, { page: 3, limit: 10 })),
      'products',
    )
    expect(scans).toContainEqual(
      expect.objectContaining({
        'Node Type': 'Index Only Scan',
        'Index Name': 'products_live_category_price_idx',
      }),
    )
  })

  it('passes the rows before a deep page as stored, and writes out only the page', async () => {
    const nodes = await planNodesOf(
      testDatabase.database.db,
      repository.listPageQuery({}, { page: 5000, limit: 10 }),
      { verbose: true },
    )
    const [scan] = on(nodes, 'products')
    expect(scan?.['Index Name']).toBe('products_live_order_idx')
    expect(scan?.Output?.join()).not.toContain('to_char')
    expect(nodes[0]?.Output?.join()).toContain('to_char')
  })

  it('finds the matches of a search once, for its page and its total', async () => {
    const nodes = await planNodesOf(
      testDatabase.database.db,
      repository.listPageQuery({ search: 'e4da3b' }, { page: 2, limit: 10 }),
    )
    const searches = searchesIn(nodes)
    expect(searches).toHaveLength(1)
  })

  // A search that matches nearly every product of its category reads that category's
  // entries of products_live_category_price_idx instead (the tests above).
  it('narrows a rare search within a category by both at once, in one scan of one index', async () => {
    const nodes = await planNodesOf(
      testDatabase.database.db,
      repository.listPageQuery(
        { category: 'category-5', search: 'e4da3b' },
        { page: 1, limit: 10 },
      ),
    )
    const searches = searchesIn(nodes)
    expect(searches).toHaveLength(1)
    expect(searches[0]?.['Index Cond']).toMatch(/category = .*AND .*name ~~\* /)
  })

  it('reads the page of the unfiltered list in order from its index, without sorting', async () => {
    const scans = on(
      await scansOf(repository.listPageQuery({}, { page: 1, limit: 10 })),
      'products',
    )
    expect(scans.map((scan) => scan['Index Name'])).toContain('products_live_order_idx')
  })

  it('reads a product by id through the primary key', async () => {
    const query = testDatabase.database.db.select().from(products).where(sql`id = 50000`)
    const [scan] = on(await scansOf(query), 'products')
    expect(scan).toMatchObject({ 'Node Type': 'Index Scan', 'Index Name': 'products_pkey' })
  })
})

// What a session has prepared is visible only to that session: one connection, then.
describe.runIf(backends.some((backend) => backend.name === 'postgres'))(
  'statements on one Postgres connection',
  () => {
    let testDatabase: TestDatabase
    let client: ReturnType<typeof postgres>
    let repository: ProductsRepository

    beforeAll(async () => {
      const backend = backends.find((each) => each.name === 'postgres') as Backend
      testDatabase = await backend.open()
      client = postgres(testDatabase.url as string, { max: 1, onnotice: () => {} })
      repository = createProductsRepository(drizzle({ client, schema }) as unknown as Database)
    })
    afterAll(async () => {
      await client?.end()
      await testDatabase?.drop()
    })

    it('prepares the fixed statements once, and sends every list unnamed, planned for its values', async () => {
      const { product: created } = await repository.insert({
        name: 'Oak desk',
        price: 120,
        category: 'desks',
      })
      // Past five runs Postgres would switch a prepared statement to a generic plan.
      for (let run = 0; run < 8; run += 1) {
        expect(await repository.findById(created.id)).toMatchObject({ name: 'Oak desk' })
        const { total } = await repository.listPage({ search: `oak${run}` }, { page: 1, limit: 10 })
        expect(total).toBe(0)
      }
      const prepared = await client<{ statement: string }[]>`
        select statement from pg_prepared_statements where not from_sql`
      const statements = prepared.map((each) => each.statement)
      expect(
        statements.some((each) =>
          /^select .* from "products" where "products"."id" = \$1$/.test(each),
        ),
      ).toBe(true)
      expect(
        statements.some((each) => /^with "changed" as \(\s*insert into "products"/.test(each)),
      ).toBe(true)
      expect(statements.filter((each) => each.includes('page_rows'))).toEqual([])
    })
  },
)
