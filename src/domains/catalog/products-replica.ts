import type { ReadReplica } from '../../db/read-replica.js'
import type { NewestWrite } from '../../platform/infrastructure/read-cache.js'
import type { ProductsRepository } from './products-repository.js'

type ListPage = ProductsRepository['listPage']
type FindById = ProductsRepository['findById']

/**
 * The repository as the service reads it: a list or a read by id may be told the newest
 * write it must see (its caller's, or that of what it reads: see ReadCache), which only
 * the read replica looks at. Every other read, those inside a write's transaction
 * included, and every write, is the primary's.
 */
export type ProductStore = Omit<ProductsRepository, 'listPage' | 'findById'> & {
  listPage(...args: [...Parameters<ListPage>, NewestWrite?]): ReturnType<ListPage>
  findById(...args: [...Parameters<FindById>, NewestWrite?]): ReturnType<FindById>
}

/**
 * The primary's repository, with lists and reads by id answered by `onReplica` (the same
 * statements, prepared on the replica's pool) whenever the replica may answer them.
 */
export function withReplicaReads(
  primary: ProductsRepository,
  onReplica: ProductsRepository,
  replica: Pick<ReadReplica, 'read'>,
): ProductStore {
  return {
    ...primary,
    listPage: (filters, request, newestWrite) =>
      replica.read(
        newestWrite,
        () => onReplica.listPage(filters, request),
        () => primary.listPage(filters, request),
      ),
    findById: (id, newestWrite) =>
      replica.read(
        newestWrite,
        () => onReplica.findById(id),
        () => primary.findById(id),
      ),
  }
}
