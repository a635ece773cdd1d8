import type { components } from '../../../generated/openapi.js'
import type { ProductRow } from '../../db/schema.js'
import { defaulted, type ServiceHandlers, sentInQuery } from '../../http/operations.js'
import type { ProductsService } from './products-service.js'

type Product = components['schemas']['Product']

export function createProductHandlers(products: ProductsService) {
  return {
    async listProducts(request) {
      const { page, limit, cursor, ...filters } = request.query
      const result = await products.list(filters, {
        page: defaulted(page, 'page'),
        limit: defaulted(limit, 'limit'),
        cursor,
        pageGiven: sentInQuery(request, 'page'),
      })
      return { data: result.items.map(toProduct), pagination: result.pagination }
    },

    async getProduct(request) {
      return { data: toProduct(await products.get(request.params.id)) }
    },

    async createProduct(request, reply) {
      const product = await products.create(request.body)
      reply.code(201).header('location', `/products/${product.id}`)
      return { data: toProduct(product) }
    },

    async updateProduct(request) {
      return { data: toProduct(await products.update(request.params.id, request.body)) }
    },

    async deleteProduct(request, reply) {
      await products.remove(request.params.id)
      return reply.code(204).send()
    },
  } satisfies Partial<ServiceHandlers>
}

function toProduct(row: ProductRow): Product {
  return {
    id: row.id,
    name: row.name,
    price: row.price,
    category: row.category,
    stock: row.stock,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  }
}
