import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { seedProducts } from '../bench/seed.js'
import { products } from '../src/db/schema.js'
import {
  createProductsRepository,
  type ProductsRepository,
} from '../src/domains/catalog/products-repository.js'
import { backends, type TestDatabase } from './helpers/backends.js'

interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Index Name'?: string
  Plans?: PlanNode[]
}

const flatten = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(flatten)]

// The plans the planner picks on 100k products, checked by their shape, never by time.
describe.each(backends)('query plans on 100k products on $name', (backend) => {
  let testDatabase: TestDatabase
  let repository: ProductsRepository

  const scansOf = async (query: Parameters<typeof sql>[1]) => {
    const result = await testDatabase.database.db.execute(sql`explain (format json) ${query}`)
    const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Record<
      string,
      unknown
    >[]
    const plan = Object.values(rows[0] ?? {})[0]
    const [{ Plan }] = (typeof plan === 'string' ? JSON.parse(plan) : plan) as [{ Plan: PlanNode }]
    return flatten(Plan).filter((node) => node['Relation Name'] !== undefined)
  }
  const on = (scans: PlanNode[], table: string) =>
    scans.filter((scan) => scan['Relation Name'] === table)

  beforeAll(async () => {
    // One statement seeds 100k rows: longer than the service lets a statement run.
    testDatabase = await backend.open({ databaseTimeoutMs: 120_000 })
    await seedProducts(testDatabase.database.db, 100_000)
    repository = createProductsRepository(testDatabase.database.db)
  }, 120_000)
  afterAll(() => testDatabase?.drop())

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

  it('reads the page of the unfiltered list in order from its index, without sorting', async () => {
    const scans = on(
      await scansOf(repository.listPageQuery({}, { page: 1, limit: 10 })),
      'products',
    )
    expect(scans.map((scan) => scan['Index Name'])).toContain('products_live_order_idx')
  })

  it('plans each run for its own values, never with a cached generic plan', async () => {
    const result = await testDatabase.database.db.execute(sql`show plan_cache_mode`)
    const rows = Array.isArray(result) ? result : (result as { rows: unknown[] }).rows
    expect(rows).toEqual([{ plan_cache_mode: 'force_custom_plan' }])
  })

  it('reads a product by id through the primary key', async () => {
    const query = testDatabase.database.db.select().from(products).where(sql`id = 50000`)
    const [scan] = on(await scansOf(query), 'products')
    expect(scan).toMatchObject({ 'Node Type': 'Index Scan', 'Index Name': 'products_pkey' })
  })
})
