import type { Infrastructure } from '../domain-module.js'
import { createInventory } from './inventory.js'
import { withReadCache } from './products-cache.js'
import { createProductHandlers } from './products-handlers.js'
import { type ProductStore, withReplicaReads } from './products-replica.js'
import { createProductsRepository } from './products-repository.js'
import { createProductsService } from './products-service.js'

/** The product catalog of the REST API. */
export function createCatalogModule({
  database,
  readCache,
  recentWrites,
  outbox,
}: Pick<Infrastructure, 'database' | 'readCache' | 'recentWrites' | 'outbox'>) {
  const onPrimary = createProductsRepository(database.db)
  const { replica } = database
  const store: ProductStore = replica
    ? withReplicaReads(onPrimary, createProductsRepository(replica.db), replica)
    : onPrimary
  const products = createProductsService({ products: withReadCache(store, readCache), outbox })
  return {
    name: 'catalog',
    handlers: createProductHandlers(products, {
      cacheTtlSeconds: readCache.ttlSeconds,
      lastWriteBy: (request) => recentWrites?.lastWriteBy(request),
    }),
    /** The stock, as orders take it and give it back inside their own transactions. */
    inventory: createInventory(readCache),
  }
}
