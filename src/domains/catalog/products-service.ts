import type { ProductRow } from '../../db/schema.js'
import { gone, notFound, unprocessable } from '../../platform/errors.js'
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

export function createProductsService({ products }: { products: ProductsRepository }) {
  /** Tells a product that never existed (404) from one that was deleted (410). */
  async function missing(id: number): Promise<never> {
    const row = await products.findById(id)
    throw row ? gone(`Product ${id} was deleted`) : notFound(`Product ${id} does not exist`)
  }

  return {
    async list(filters: ProductFilters, request: PageRequest): Promise<ProductPage> {
      const { minPrice, maxPrice } = filters
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
      return products.insert(product)
    },

    async update(id: number, changes: ProductChanges): Promise<ProductRow> {
      return (await products.update(id, changes)) ?? missing(id)
    },

    async remove(id: number): Promise<void> {
      if (!(await products.softDelete(id))) await missing(id)
    },
  }
}

export type ProductsService = ReturnType<typeof createProductsService>
