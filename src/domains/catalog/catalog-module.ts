import type { Infrastructure } from '../module.js'
import { createProductHandlers } from './products-handlers.js'
import { createProductsRepository } from './products-repository.js'
import { createProductsService } from './products-service.js'

/** The product catalog of the REST API. */
export function createCatalogModule({ database }: Pick<Infrastructure, 'database'>) {
  const products = createProductsService({ products: createProductsRepository(database.db) })
  return { name: 'catalog', handlers: createProductHandlers(products) }
}
