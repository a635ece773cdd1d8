import { and, count, desc, eq, gte, ilike, isNull, lte, type SQL, sql } from 'drizzle-orm'
import type { Database, Executor } from '../../db/client.js'
import { type ProductRow, productCounts, products } from '../../db/schema.js'

export interface ProductFilters {
  category?: string | undefined
  minPrice?: number | undefined
  maxPrice?: number | undefined
  search?: string | undefined
}

export interface PageRequest {
  page: number
  limit: number
}

/** `stock` left out takes the column's default, 0. */
export type NewProduct = Pick<typeof products.$inferInsert, 'name' | 'price' | 'category' | 'stock'>
export type ProductChanges = Partial<NewProduct>

const live = isNull(products.deletedAt)

export function createProductsRepository(db: Database) {
  const statements = prepareStatements(db)
  return {
    /** One page and the filtered total, in one round trip. */
    async listPage(filters: ProductFilters, request: PageRequest, executor: Executor = db) {
      const rows = await listPageQuery(filters, request, executor)
      return {
        total: rows[0]?.total.count ?? 0,
        items: rows.flatMap((row) => (row.page_rows ? [row.page_rows] : [])),
      }
    },

    /** The statement behind listPage, for EXPLAIN. */
    listPageQuery: (filters: ProductFilters, request: PageRequest) =>
      listPageQuery(filters, request, db),

    async findById(id: number): Promise<ProductRow | undefined> {
      const [row] = await statements.byId.execute({ id })
      return row
    },

    async insert({ name, price, category, stock }: NewProduct): Promise<ProductRow> {
      // A prepared statement names every column, so the column's default comes from here.
      const [row] = await statements.insert.execute({ name, price, category, stock: stock ?? 0 })
      if (!row) throw new Error('INSERT … RETURNING gave no row')
      return row
    },

    /** Changes a live product; undefined when there is none with that id. */
    async update(id: number, changes: ProductChanges, executor: Executor = db) {
      const [row] = await executor
        .update(products)
        .set({ ...changes, updatedAt: sql`now()` })
        .where(and(eq(products.id, id), live))
        .returning()
      return row
    },

    /** Marks a live product deleted; false when there is none with that id. */
    async softDelete(id: number, executor: Executor = db): Promise<boolean> {
      const rows = await executor
        .update(products)
        .set({ deletedAt: sql`now()` })
        .where(and(eq(products.id, id), live))
        .returning({ id: products.id })
      return rows.length > 0
    },
  }
}

export type ProductsRepository = ReturnType<typeof createProductsRepository>

/**
 * The statements whose text never changes are built once and prepared: the builder's
 * work per request was a fifth of a read's CPU. (The lists vary with their filters and
 * stay unnamed, so Postgres plans each for its values.)
 */
function prepareStatements(db: Database) {
  return {
    byId: db
      .select()
      .from(products)
      .where(eq(products.id, sql.placeholder('id')))
      .prepare('products_by_id'),
    insert: db
      .insert(products)
      .values({
        name: sql.placeholder('name'),
        price: sql.placeholder('price'),
        category: sql.placeholder('category'),
        stock: sql.placeholder('stock'),
      })
      .returning()
      .prepare('products_insert'),
  }
}

function listPageQuery(filters: ProductFilters, { page, limit }: PageRequest, executor: Executor) {
  const where = and(live, ...filterConditions(filters))
  const total = executor.$with('total').as(totalQuery(filters, where, executor))
  const pageRows = executor
    .select()
    .from(products)
    .where(where)
    .orderBy(desc(products.createdAt), desc(products.id))
    .limit(limit)
    .offset((page - 1) * limit)
    .as('page_rows')
  // The total's single row joins the page, so a page past the last still brings it;
  // the outer order keeps the page's (a join may not).
  return executor
    .with(total)
    .select()
    .from(pageRows)
    .rightJoin(total, sql`true`)
    .orderBy(desc(pageRows.createdAt), desc(pageRows.id))
}

/**
 * The filtered total: without a price or search filter it is summed from the counts the
 * triggers keep per category; otherwise counted.
 */
function totalQuery(filters: ProductFilters, where: SQL | undefined, executor: Executor) {
  const { category, minPrice, maxPrice, search } = filters
  if (minPrice === undefined && maxPrice === undefined && search === undefined) {
    return executor
      .select({ count: sql<number>`coalesce(sum(${productCounts.live}), 0)::int`.as('count') })
      .from(productCounts)
      .where(category === undefined ? undefined : eq(productCounts.category, category))
  }
  return executor
    .select({ count: count().as('count') })
    .from(products)
    .where(where)
}

function filterConditions({ category, minPrice, maxPrice, search }: ProductFilters): SQL[] {
  const conditions: SQL[] = []
  if (category !== undefined) conditions.push(eq(products.category, category))
  if (minPrice !== undefined) conditions.push(gte(products.price, minPrice))
  if (maxPrice !== undefined) conditions.push(lte(products.price, maxPrice))
  if (search !== undefined) conditions.push(ilike(products.name, `%${escapeLike(search)}%`))
  return conditions
}

/** The search is a literal substring: %, _ and \ in it match themselves. */
function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (character) => `\\${character}`)
}
