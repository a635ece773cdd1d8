import type { Infrastructure } from '../domain-module.js'
import { createInventory } from './inventory.js'
import { withReadCache } from './products-cache.js'
import { createProductHandlers } from './products-handlers.js'
import { createProductsRepository } from './products-repository.js'
import { createProductsService } from './products-service.js'

/** The product catalog of the REST API. */
export function createCatalogModule({
  database,
  readCache,
  outbox,
}: Pick<Infrastructure, 'database' | 'readCache' | 'outbox'>) {
  const products = createProductsService({
    products: withReadCache(createProductsRepository(database.db), readCache),
    outbox,
  })
  return {
    name: 'catalog',
    handlers: createProductHandlers(products, readCache.ttlSeconds),
    /** The stock, as orders take it and give it back inside their own transactions. */
    inventory: createInventory(readCache),
  }
}
