import { createIdempotencyKeys } from '../../platform/infrastructure/idempotency.js'
import { periodicTask } from '../../platform/periodic-task.js'
import type { Inventory } from '../catalog/inventory.js'
import type { Infrastructure } from '../domain-module.js'
import { createOrderHandlers } from './orders-handlers.js'
import { createOrdersRepository } from './orders-repository.js'
import { createOrderResolvers } from './orders-resolvers.js'
import { createOrdersService, type Notifier } from './orders-service.js'

/** Expired Idempotency-Keys are forgotten this often. */
const PRUNE_EVERY_MS = 60 * 60 * 1000

/** Orders: placed against the catalog's stock, moved along their status, followed live. */
export function createOrdersModule(
  { database, events, outbox, log }: Pick<Infrastructure, 'database' | 'events' | 'outbox' | 'log'>,
  { inventory, notifier }: { inventory: Inventory; notifier: Notifier },
) {
  const idempotencyKeys = createIdempotencyKeys()
  const orders = createOrdersService({
    db: database.db,
    orders: createOrdersRepository(database.db),
    inventory,
    notifier,
    outbox,
    idempotencyKeys,
  })
  const pruning = periodicTask(
    () =>
      idempotencyKeys.prune(database.db).catch((error: unknown) => {
        log.warn({ err: error }, 'expired idempotency keys could not be pruned; next time')
      }),
    PRUNE_EVERY_MS,
  )

  return {
    name: 'orders',
    handlers: createOrderHandlers(orders),
    resolvers: createOrderResolvers(orders, events),
    /** What payments need of orders: to pay one inside their own transaction. */
    payments: { payWithin: orders.payWithin, announce: orders.announce },
    start: pruning.start,
    stop: pruning.stop,
  }
}
