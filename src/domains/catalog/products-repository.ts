import {
  and,
  desc,
  eq,
  getTableColumns,
  gte,
  ilike,
  isNull,
  lte,
  type Placeholder,
  type SQL,
  type SQLWrapper,
  sql,
} from 'drizzle-orm'
import type { AnyPgColumn } from 'drizzle-orm/pg-core'
import type { Database, Executor } from '../../db/database.js'
import { batchedInserts, givenRows, givenValues } from '../../db/insert-batches.js'
import { isoInstant, type WithIsoInstants } from '../../db/iso-instant.js'
import { containing } from '../../db/like-pattern.js'
import { outbox, productCounts, products } from '../../db/schema.js'
import { prepareRows, type RowsOf, unnamedRows } from '../../db/statement-rows.js'
import type { PendingEvent } from '../../platform/infrastructure/outbox.js'
import { type ProductChange, type ProductChangedEvent, productTopics } from './catalog-topics.js'

export interface ProductFilters {
  category?: string | undefined
  minPrice?: number | undefined
  maxPrice?: number | undefined
  search?: string | undefined
}

/**
 * A row's place in the list order. `createdAt` is the stored instant as Postgres prints
 * it, in UTC to the microsecond (ISO 8601), not a Date: a Date holds milliseconds, which
 * the column keeps today, and a key that rounded would skip or repeat rows were it ever
 * to keep more.
 */
export interface SortKey {
  createdAt: string
  id: number
}

/** A page by number (OFFSET), or the page right after a row (keyset: reads only the page). */
export type PageRequest = { limit: number } & ({ page: number } | { after: SortKey })

/** A product as stored, in the form it is answered: instants as ISO 8601 text. */
export type StoredProduct = WithIsoInstants<typeof products.$inferSelect>

/** The columns of a product as stored, from the table or from a subquery that has them. */
type ProductColumns = Record<keyof StoredProduct, AnyPgColumn>

/**
 * The columns of a product as StoredProduct has them, written by Postgres: no Date is made
 * and formatted again per value, and a row is the same in the cache's JSON as when read.
 */
const writtenProduct = <Row extends ProductColumns>(row: Row) => ({
  id: row.id,
  name: row.name,
  // float8 reads as a number (numeric as text), and exactly: a numeric(12, 2) has fewer
  // digits than a double keeps, and Postgres prints a double as the shortest exact text.
  price: sql<number>`${row.price}::float8`.as('price'),
  category: row.category,
  stock: row.stock,
  createdAt: isoInstant(row.createdAt).as('createdAt'),
  updatedAt: isoInstant(row.updatedAt).as('updatedAt'),
  deletedAt: sql<string | null>`${isoInstant(row.deletedAt)}`.as('deletedAt'),
})

// A column added to the table must be written above before its rows may claim to have it.
const storedProduct = writtenProduct(products) satisfies Record<keyof StoredProduct, unknown>

/**
 * A product as a write left it, with the event that announces the write: recorded in the
 * outbox by the write's own statement, to publish once it has committed.
 */
export interface AnnouncedProduct {
  product: StoredProduct
  event: PendingEvent<ProductChangedEvent>
}

/** A row of an announcing statement: the product's columns and its event's id. */
type AnnouncedRow = StoredProduct & { eventId: number }

/** `stock` left out takes the column's default, 0. */
export type NewProduct = Pick<typeof products.$inferInsert, 'name' | 'price' | 'category' | 'stock'>
export type ProductChanges = Partial<NewProduct>
/** A condition on a product as it is before a write (an If-Match); it throws to refuse. */
export type ProductCheck = (current: StoredProduct) => void

const live = isNull(products.deletedAt)

export function createProductsRepository(db: Database) {
  const statements = prepareStatements(db)
  const insertBatched = batchedInserts((given: readonly Required<NewProduct>[]) =>
    statements.insertAll(givenValues(given)),
  )
  const listPageStatement = listPageStatements(db)
  return {
    /**
     * One page and the filtered total, in one round trip; whether an item follows, and
     * the sort key of the page's last row, to start the next page after.
     */
    async listPage(filters: ProductFilters, request: PageRequest) {
      const rows = await listPageStatement(listValuesOf(filters, request))
      const found = rows.flatMap(({ count, sortKey, ...product }) =>
        sortKey === null ? [] : [{ product: product as StoredProduct, sortKey }],
      )
      const page = found.slice(0, request.limit)
      const last = page.at(-1)
      return {
        total: rows[0]?.count ?? 0,
        items: page.map(({ product }) => product),
        hasNext: found.length > request.limit,
        lastKey: last && { createdAt: last.sortKey, id: last.product.id },
      }
    },

    /** The statement behind listPage, with its values, for EXPLAIN. */
    listPageQuery: (filters: ProductFilters, request: PageRequest) =>
      listPageQuery(listValuesOf(filters, request), db),

    async findById(id: number): Promise<StoredProduct | undefined> {
      const [row] = await statements.byId({ id })
      return row
    },

    insert: async ({ name, price, category, stock }: NewProduct): Promise<AnnouncedProduct> =>
      // The statement names every column, so the column's default comes from here.
      announced(await insertBatched({ name, price, category, stock: stock ?? 0 }), 'created'),

    /** Changes a live product; undefined when there is none with that id (see `guarded`). */
    update: (id: number, changes: ProductChanges, check?: ProductCheck) =>
      guarded(id, check, async (executor) => {
        const change = executor
          .update(products)
          .set({ ...changes, updatedAt: sql`now()` })
          .where(and(eq(products.id, id), live))
          .returning()
        const [row] = await announcing(executor, change.getSQL(), 'updated')
        return row && announced(row as AnnouncedRow, 'updated')
      }),

    /** Marks a live product deleted; undefined when there is none with that id (see `guarded`). */
    softDelete: (id: number, check?: ProductCheck) =>
      guarded(id, check, async (executor) => {
        const change = executor
          .update(products)
          .set({ deletedAt: sql`now()` })
          .where(and(eq(products.id, id), live))
          .returning()
        const [row] = await announcing(executor, change.getSQL(), 'deleted')
        return row && announced(row as AnnouncedRow, 'deleted')
      }),
  }

  /**
   * A write of a live product, in one statement; with a check, after the check has
   * passed on the row as it is, locked in the write's transaction, so no other write
   * comes between them. A check that throws leaves the row as it was. Undefined when no
   * live product has the id; the check is then not made (404 and 410 come before it).
   */
  async function guarded<T>(
    id: number,
    check: ProductCheck | undefined,
    write: (executor: Executor) => Promise<T | undefined>,
  ): Promise<T | undefined> {
    if (!check) return write(db)
    return db.transaction(async (tx) => {
      const [current] = await tx
        .select(storedProduct)
        .from(products)
        .where(and(eq(products.id, id), live))
        .for('update')
      if (!current) return undefined
      check(current)
      return write(tx)
    })
  }
}

export type ProductsRepository = ReturnType<typeof createProductsRepository>

/**
 * The statements whose text never changes are built once and prepared: the builder's
 * work per request was a large part of a read's CPU, and drizzle's prepared-statement
 * session and mapping a part of a create's. (The lists vary with their filters and stay
 * unnamed, so Postgres plans each for its values.)
 */
function prepareStatements(db: Database) {
  return {
    byId: prepareRows<StoredProduct>(
      db,
      db
        .select(storedProduct)
        .from(products)
        .where(eq(products.id, sql.placeholder('id'))),
    ),
    insertAll: prepareRows<AnnouncedRow>(db, insertProducts(db)),
  }
}

const column = (each: AnyPgColumn) => sql.identifier(each.name)

/**
 * Inserts the products given (see givenRows) and answers them in the order given: they are
 * inserted in that order, so their ids ascend in it.
 */
function insertProducts(db: Database) {
  const { name, price, category, stock } = products
  return announcing(
    db,
    sql`
    insert into ${products} (${column(name)}, ${column(price)}, ${column(category)}, ${column(stock)})
    select name, price, category, stock
    from ${givenRows(sql`name text, price numeric, category text, stock integer`)}
    order by ordinality
    returning *`,
    'created',
  )
}

/**
 * The statement of a write of products (`change`, returning its rows) that records, in
 * the same statement, one outbox event per row written: the product as the API shows it
 * once the write is done. So the write and its events commit together or not at all;
 * the rows come back in id order, each with its event's id.
 */
function announcing(db: Executor, change: SQL, kind: ProductChange) {
  const changed = db.$with('changed', getTableColumns(products)).as(change)
  const written = db.$with('written').as(db.select(writtenProduct(changed)).from(changed))
  const events = db
    .$with('events', {
      eventId: sql<number>`"eventId"`.as('eventId'),
      productId: sql<number>`"productId"`.as('productId'),
    })
    .as(sql`
      insert into ${outbox} (topic, payload)
      select 'product/' || id || '/' || ${kind}::text,
        jsonb_build_object('product', to_jsonb(${written}) - 'deletedAt')
      from ${written}
      returning id as "eventId", (payload->'product'->>'id')::int as "productId"`)
  const { id, name, price, category, stock, createdAt, updatedAt, deletedAt } = written
  return db
    .with(changed, written, events)
    .select({
      ...{ id, name, price, category, stock, createdAt, updatedAt, deletedAt },
      eventId: events.eventId,
    })
    .from(written)
    .innerJoin(events, eq(events.productId, written.id))
    .orderBy(written.id)
}

/** A written row as its product and its event, which carries the product without deletedAt. */
function announced({ eventId, ...product }: AnnouncedRow, kind: ProductChange): AnnouncedProduct {
  const { deletedAt: _deletedAt, ...shown } = product
  return {
    product,
    event: {
      id: eventId,
      topic: productTopics.changed(product.id, kind),
      payload: { product: shown },
    },
  }
}

// to_char, not ::text: the text of a timestamptz follows the session's DateStyle and TimeZone.
const sortKeyInstant = (createdAt: SQLWrapper) =>
  sql<string>`to_char(${createdAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

type Value<T> = T | Placeholder

/**
 * What a list statement is built with, by name: each value, or a placeholder standing in
 * for it. The names present are the statement's shape.
 */
type ListValues = {
  category?: Value<string>
  minPrice?: Value<number>
  maxPrice?: Value<number>
  /** The search as an ILIKE pattern. */
  pattern?: Value<string>
  afterCreatedAt?: Value<string>
  afterId?: Value<number>
  /** One row more than the page: whether another page follows, without counting. */
  rows: Value<number>
  offset: Value<number>
}

/**
 * A row of the list: a page's product with its sort key, or none (an empty page); the total.
 * Not a table row: the right join makes every product column nullable, and sortKey and
 * count are computed.
 */
type ListRow = { [Column in keyof StoredProduct]: StoredProduct[Column] | null } & {
  sortKey: string | null
  count: number
}

function listValuesOf(
  { category, minPrice, maxPrice, search }: ProductFilters,
  request: PageRequest,
): ListValues {
  return {
    ...(category !== undefined && { category }),
    ...(minPrice !== undefined && { minPrice }),
    ...(maxPrice !== undefined && { maxPrice }),
    ...(search !== undefined && { pattern: containing(search) }),
    ...('after' in request && {
      afterCreatedAt: request.after.createdAt,
      afterId: request.after.id,
    }),
    rows: request.limit + 1,
    offset: 'page' in request ? (request.page - 1) * request.limit : 0,
  }
}

/**
 * The list statement of each shape, built by drizzle once and sent unnamed with its
 * values, so Postgres still plans each for them (see PLANNER_SETTINGS). Building it at
 * every request was much of the CPU of a list read from the database. At most 32
 * shapes: four filters, by page or after a row.
 */
function listPageStatements(db: Database) {
  const byShape = new Map<string, RowsOf<ListRow>>()
  return (values: ListValues) => {
    const names = Object.keys(values) as (keyof ListValues)[]
    const shape = names.join()
    let statement = byShape.get(shape)
    if (!statement) {
      const placeholders = { ...values }
      for (const name of names) placeholders[name] = sql.placeholder(name)
      statement = unnamedRows<ListRow>(db, listPageQuery(placeholders, db))
      byShape.set(shape, statement)
    }
    return statement(values)
  }
}

function listPageQuery(values: ListValues, executor: Executor) {
  const where = and(live, ...filterConditions(values))
  const { sources, total, pageRows } =
    values.pattern === undefined
      ? pageInOrder(values, where, executor)
      : pageOfMatches(values, where, executor)
  // The page's rows are written out here, once chosen: a page far down the list passes
  // the rows before it as they are stored, where writing every row it passed made a
  // deep page many times slower than the bare baseline's. The total's single row
  // joins the page, so a page past the last still brings it; the outer order keeps the
  // page's (a join may not).
  return executor
    .with(...sources)
    .select({
      ...writtenProduct(pageRows),
      sortKey: sortKeyInstant(pageRows.createdAt).as('sortKey'),
      count: total.count,
    })
    .from(pageRows)
    .rightJoin(total, sql`true`)
    .orderBy(desc(pageRows.createdAt), desc(pageRows.id))
}

/** A page's rows as stored: written out only once the page is chosen (listPageQuery). */
const pageColumns = getTableColumns(products)

/** The page read in the list's order, from an order index where it can, and the total apart. */
function pageInOrder(values: ListValues, where: SQL | undefined, executor: Executor) {
  const total = executor.$with('total').as(totalQuery(values, where, executor))
  const pageRows = executor
    .select(pageColumns)
    .from(products)
    .where(and(where, after(values, products)))
    .orderBy(desc(products.createdAt), desc(products.id))
    .limit(values.rows)
    .offset(values.offset)
    .as('page_rows')
  return { sources: [total], total, pageRows }
}

/**
 * A searched list: the rows that match are found once, for the total and the page. The
 * trigram index only narrows them down; each is then checked against the pattern on its
 * row, the larger part of such a list's cost, paid twice when the total and the page
 * each did it.
 */
function pageOfMatches(values: ListValues, where: SQL | undefined, executor: Executor) {
  const matching = executor
    .$with('matching')
    .as(
      executor
        .select({ id: products.id, createdAt: products.createdAt })
        .from(products)
        .where(where),
    )
  const total = executor
    .$with('total')
    .as(executor.select({ count: sql<number>`count(*)::int`.as('count') }).from(matching))
  const pageIds = executor
    .select({ id: matching.id })
    .from(matching)
    .where(after(values, matching))
    .orderBy(desc(matching.createdAt), desc(matching.id))
    .limit(values.rows)
    .offset(values.offset)
    .as('page_ids')
  const pageRows = executor
    .select(pageColumns)
    .from(products)
    .innerJoin(pageIds, eq(products.id, pageIds.id))
    .as('page_rows')
  return { sources: [matching, total], total, pageRows }
}

/**
 * The rows after the cursor's row in the list order, which descends; none without a
 * cursor. As a row comparison it is a range of the order indexes ((category,) created_at
 * desc, id desc): the scan starts at the key instead of reading and skipping the rows
 * before it.
 */
function after(
  { afterCreatedAt, afterId }: ListValues,
  rows: { createdAt: SQLWrapper; id: SQLWrapper },
): SQL | undefined {
  if (afterCreatedAt === undefined || afterId === undefined) return undefined
  return sql`(${rows.createdAt}, ${rows.id}) < (${afterCreatedAt}::timestamptz, ${afterId}::int)`
}

/**
 * The total of a list without a search: without a price filter either it is summed from
 * the counts the triggers keep per category; otherwise counted.
 */
function totalQuery(values: ListValues, where: SQL | undefined, executor: Executor) {
  const { category, minPrice, maxPrice } = values
  if (minPrice === undefined && maxPrice === undefined) {
    return executor
      .select({ count: sql<number>`coalesce(sum(${productCounts.live}), 0)::int`.as('count') })
      .from(productCounts)
      .where(category === undefined ? undefined : eq(productCounts.category, category))
  }
  return executor
    .select({ count: sql<number>`count(*)::int`.as('count') })
    .from(products)
    .where(where)
}

function filterConditions({ category, minPrice, maxPrice, pattern }: ListValues): SQL[] {
  const conditions: SQL[] = []
  if (category !== undefined) conditions.push(eq(products.category, category))
  if (minPrice !== undefined) conditions.push(gte(products.price, minPrice))
  if (maxPrice !== undefined) conditions.push(lte(products.price, maxPrice))
  if (pattern !== undefined) conditions.push(ilike(products.name, pattern))
  return conditions
}
