import type { FastifyRequest } from 'fastify'
import type { components } from '../../../generated/openapi.js'
import { defaulted, type ServiceHandlers, sentInQuery } from '../../http/operations.js'
import { ifMatchOf } from '../../http/preconditions.js'
import type { StoredProduct } from './products-repository.js'
import type { ProductsService } from './products-service.js'

type Product = components['schemas']['Product']

/**
 * A public read may be kept by a browser or a proxy as long as this service keeps it in
 * its own cache; with the cache off, a copy is checked again (by its ETag) before use.
 */
const publicCaching = (ttlSeconds: number) =>
  ttlSeconds > 0 ? `public, max-age=${ttlSeconds}` : 'public, no-cache'

export interface ProductHandlerSettings {
  cacheTtlSeconds: number
  /** When the request's caller last wrote, if its reads must see it (a read replica). */
  lastWriteBy: (request: FastifyRequest) => number | undefined
}

export function createProductHandlers(
  products: ProductsService,
  { cacheTtlSeconds, lastWriteBy }: ProductHandlerSettings,
) {
  const cacheControl = publicCaching(cacheTtlSeconds)
  return {
    async listProducts(request, reply) {
      const { page, limit, cursor, ...filters } = request.query
      const pageRequest = {
        page: defaulted(page, 'page'),
        limit: defaulted(limit, 'limit'),
        cursor,
        pageGiven: sentInQuery(request, 'page'),
      }
      const result = await products.list(filters, pageRequest, lastWriteBy(request))
      reply.header('cache-control', cacheControl)
      return { data: result.items.map(toProduct), pagination: result.pagination }
    },

    async getProduct(request, reply) {
      const product = await products.get(request.params.id, lastWriteBy(request))
      reply.header('cache-control', cacheControl)
      return { data: toProduct(product) }
    },

    async createProduct(request, reply) {
      const product = await products.create(request.body)
      reply.code(201).header('location', `/products/${product.id}`)
      return { data: toProduct(product) }
    },

    async updateProduct(request, reply) {
      reply.representsResource = true
      const { params, body } = request
      return { data: toProduct(await products.update(params.id, body, ifMatch(request))) }
    },

    async replaceProduct(request, reply) {
      reply.representsResource = true
      const { params, body } = request
      return { data: toProduct(await products.replace(params.id, body, ifMatch(request))) }
    },

    async deleteProduct(request, reply) {
      await products.remove(request.params.id, ifMatch(request))
      return reply.code(204).send()
    },
  } satisfies Partial<ServiceHandlers>
}

/** The request's If-Match, held against the product as its GET answers it. */
const ifMatch = (request: FastifyRequest) =>
  ifMatchOf(request, (row: StoredProduct) => ({ data: toProduct(row) }))

/** In the order of the Product schema's properties (see ifMatchOf). */
function toProduct(row: StoredProduct): Product {
  return {
    id: row.id,
    name: row.name,
    price: row.price,
    category: row.category,
    stock: row.stock,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  }
}
