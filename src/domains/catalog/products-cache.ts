import type { NewestWrite, ReadCache } from '../../platform/infrastructure/read-cache.js'
import type { ProductStore } from './products-replica.js'
import type { PageRequest, ProductFilters } from './products-repository.js'

/** What every list depends on; a product's own reads depend on `product:<id>` too. */
const LISTS = 'products'
const productReference = (id: number) => `product:${id}`

/** What a change to these products makes stale: their own reads, and every list. */
export const productReferences = (ids: readonly number[]) => [LISTS, ...ids.map(productReference)]

/**
 * The repository with its reads served from the shared cache: every write invalidates
 * what it made stale (the lists, and the product it changed) once it has committed (each
 * statement commits on its own), so no instance serves a read older than the write after
 * it has answered. A miss tells the read the newest write of what it depends on, so
 * that an entry filled soon after a write is not a lagging replica's old row.
 */
export function withReadCache(repository: ProductStore, cache: ReadCache): ProductStore {
  const listPage = cache.cached(
    'products.listPage',
    { references: () => [LISTS] },
    (
      { filters, request }: { filters: ProductFilters; request: PageRequest },
      newestWrite: NewestWrite,
    ) => repository.listPage(filters, request, newestWrite),
  )
  // A product not found is read as null, which the cache does not store.
  const findById = cache.cached(
    'products.byId',
    { references: (id: number) => [productReference(id)] },
    async (id: number, newestWrite: NewestWrite) =>
      (await repository.findById(id, newestWrite)) ?? null,
  )
  // Only a write that changed a row makes entries stale: a miss (404) invalidates nothing.
  const invalidate = (id: number) => cache.invalidate(productReferences([id]))

  return {
    ...repository,
    listPage: (filters, request, newestWrite) => listPage({ filters, request }, newestWrite),
    findById: async (id, newestWrite) => (await findById(id, newestWrite)) ?? undefined,
    async insert(product) {
      const inserted = await repository.insert(product)
      // No entry of the new id was stored (a miss is not), so only the lists are stale.
      await cache.invalidate([LISTS])
      return inserted
    },
    async update(id, changes, check) {
      const updated = await repository.update(id, changes, check)
      if (updated) await invalidate(id)
      return updated
    },
    async softDelete(id, check) {
      const deleted = await repository.softDelete(id, check)
      if (deleted) await invalidate(id)
      return deleted
    },
  }
}
