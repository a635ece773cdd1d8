import type { ProductRow } from '../../db/schema.js'
import { assertValidFields, gone, notFound, unprocessable } from '../../platform/errors.js'
import { readableTextProblem } from '../../platform/input-rules.js'
import type {
  NewProduct,
  PageRequest,
  ProductChanges,
  ProductFilters,
  ProductsRepository,
} from './products-repository.js'

export interface ProductPage {
  items: ProductRow[]
  pagination: {
    page: number
    limit: number
    total: number
    pages: number
    hasNext: boolean
    hasPrev: boolean
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

export function createProductsService({ products }: { products: ProductsRepository }) {
  /** Tells a product that never existed (404) from one that was deleted (410). */
  async function missing(id: number): Promise<never> {
    const row = await products.findById(id)
    throw row ? gone(`Product ${id} was deleted`) : notFound(`Product ${id} does not exist`)
  }

  return {
    async list(filters: ProductFilters, request: PageRequest): Promise<ProductPage> {
      const { minPrice, maxPrice, search } = filters
      assertValidFields({
        // Without a letter or digit there is no trigram to find it by: a scan of the table.
        search:
          search === undefined || /[\p{L}\p{N}]/u.test(search)
            ? undefined
            : 'must contain a letter or a digit',
      })
      if (minPrice !== undefined && maxPrice !== undefined && minPrice > maxPrice) {
        throw unprocessable('minPrice must not be greater than maxPrice')
      }
      const { items, total } = await products.listPage(filters, request)
      const { page, limit } = request
      return {
        items,
        pagination: {
          page,
          limit,
          total,
          pages: Math.ceil(total / limit),
          hasNext: page * limit < total,
          hasPrev: page > 1,
        },
      }
    },

    async get(id: number): Promise<ProductRow> {
      const row = await products.findById(id)
      if (!row) throw notFound(`Product ${id} does not exist`)
      if (row.deletedAt) throw gone(`Product ${id} was deleted`)
      return row
    },

    create(product: NewProduct): Promise<ProductRow> {
      assertValidProduct(product)
      return products.insert(product)
    },

    async update(id: number, changes: ProductChanges): Promise<ProductRow> {
      assertValidProduct(changes)
      return (await products.update(id, changes)) ?? missing(id)
    },

    async remove(id: number): Promise<void> {
      if (!(await products.softDelete(id))) await missing(id)
    },
  }
}

export type ProductsService = ReturnType<typeof createProductsService>
