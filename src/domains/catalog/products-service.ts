import { assertValidFields, gone, notFound, unprocessable } from '../../platform/errors.js'
import type { Outbox } from '../../platform/infrastructure/outbox.js'
import type { NewestWrite } from '../../platform/infrastructure/read-cache.js'
import { readableTextProblem } from '../../platform/input-rules.js'
import { decodeCursor, encodeCursor } from './products-cursor.js'
import type { ProductStore } from './products-replica.js'
import type {
  AnnouncedProduct,
  NewProduct,
  ProductChanges,
  ProductCheck,
  ProductFilters,
  ProductsRepository,
  StoredProduct,
} from './products-repository.js'

/** A page by number, or, with a cursor from a previous page, the page after that one. */
export interface ListRequest {
  page: number
  limit: number
  cursor?: string | undefined
  /** Whether the client named the page, which it may not beside a cursor. */
  pageGiven: boolean
}

export interface ProductPage {
  items: StoredProduct[]
  pagination: {
    page: number
    limit: number
    total: number
    pages: number
    hasNext: boolean
    hasPrev: boolean
    nextCursor: string | null
  }
}

/**
 * What the schema cannot say without narrowing the published contract: names and
 * categories are not blank, and a price is at least a cent once stored to the cent
 * (5e-324 is a multiple of 0.01 as far as floating point can tell).
 */
function assertValidProduct({ name, category, price }: ProductChanges): void {
  assertValidFields({
    name: name === undefined ? undefined : readableTextProblem(name),
    category: category === undefined ? undefined : readableTextProblem(category),
    price: price !== undefined && Math.round(price * 100) < 1 ? 'must be at least 0.01' : undefined,
  })
}

/**
 * Holds a list request to the rules its schema cannot state; the position its cursor
 * names, when it has one.
 */
function assertValidList(filters: ProductFilters, { cursor, pageGiven }: ListRequest) {
  const { minPrice, maxPrice, search } = filters
  const decoded = cursor === undefined ? undefined : decodeCursor(cursor, filters)
  assertValidFields({
    // Without a letter or digit there is no trigram to find it by: a scan of the table.
    search:
      search === undefined || /[\p{L}\p{N}]/u.test(search)
        ? undefined
        : 'must contain a letter or a digit',
    cursor: decoded?.problem,
    page:
      decoded && pageGiven ? 'must not be sent with cursor, which says where to start' : undefined,
  })
  if (minPrice !== undefined && maxPrice !== undefined && minPrice > maxPrice) {
    throw unprocessable('minPrice must not be greater than maxPrice')
  }
  return decoded?.after ? decoded : undefined
}

/** The figures of a page that `passed` items of the list come before. */
function paginationOf(
  { items, total, hasNext, lastKey }: Awaited<ReturnType<ProductsRepository['listPage']>>,
  { limit, passed }: { limit: number; passed: number },
  filters: ProductFilters,
): ProductPage['pagination'] {
  const next = hasNext && lastKey ? { after: lastKey, passed: passed + items.length } : undefined
  return {
    // By cursor, the page by number its first item would be on, had nothing changed.
    page: Math.floor(passed / limit) + 1,
    limit,
    total,
    pages: Math.ceil(total / limit),
    hasNext,
    hasPrev: passed > 0,
    nextCursor: next ? encodeCursor(next, filters) : null,
  }
}

export function createProductsService({
  products,
  outbox,
}: {
  products: ProductStore
  outbox: Pick<Outbox, 'publish'>
}) {
  /** After the write's commit: its event goes out (webhooks take it from the outbox). */
  async function announce(written: AnnouncedProduct): Promise<StoredProduct> {
    await outbox.publish([written.event])
    return written.product
  }

  /** Tells a product that never existed (404) from one that was deleted (410). */
  async function missing(id: number): Promise<never> {
    const row = await products.findById(id)
    throw row ? gone(`Product ${id} was deleted`) : notFound(`Product ${id} does not exist`)
  }

  /** `check`, when given, is made on the product as it is, under the lock of the write. */
  async function update(
    id: number,
    changes: ProductChanges,
    check?: ProductCheck,
  ): Promise<StoredProduct> {
    assertValidProduct(changes)
    const updated = await products.update(id, changes, check)
    return updated ? announce(updated) : missing(id)
  }

  // A read is told its caller's last write (`newestWrite`) when that is recent; the
  // reads a write makes itself (`missing`) are the primary's.
  return {
    async list(
      filters: ProductFilters,
      request: ListRequest,
      newestWrite?: NewestWrite,
    ): Promise<ProductPage> {
      const position = assertValidList(filters, request)
      const { page, limit } = request
      const found = await products.listPage(
        filters,
        position ? { after: position.after, limit } : { page, limit },
        newestWrite,
      )
      const passed = position?.passed ?? (page - 1) * limit
      return { items: found.items, pagination: paginationOf(found, { limit, passed }, filters) }
    },

    async get(id: number, newestWrite?: NewestWrite): Promise<StoredProduct> {
      const row = await products.findById(id, newestWrite)
      if (!row) throw notFound(`Product ${id} does not exist`)
      if (row.deletedAt) throw gone(`Product ${id} was deleted`)
      return row
    },

    async create(product: NewProduct): Promise<StoredProduct> {
      assertValidProduct(product)
      return announce(await products.insert(product))
    },

    update,

    /** Every field a client sets, as a create sets them: `stock` left out is 0 again. */
    replace: (id: number, product: NewProduct, check?: ProductCheck): Promise<StoredProduct> =>
      update(id, { ...product, stock: product.stock ?? 0 }, check),

    async remove(id: number, check?: ProductCheck): Promise<void> {
      const deleted = await products.softDelete(id, check)
      if (deleted) await announce(deleted)
      else await missing(id)
    },
  }
}

export type ProductsService = ReturnType<typeof createProductsService>
