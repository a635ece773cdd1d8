import type { Infrastructure } from '../domain-module.js'
import type { OrdersService } from '../orders/orders-service.js'
import { createPaymentHandlers } from './payments-handlers.js'
import { createPaymentsService } from './payments-service.js'
import { createWebhookDeliveriesRepository } from './webhook-deliveries-repository.js'

/** The payment provider's signed webhooks: each delivery applied to its order once. */
export function createPaymentsModule(
  { database }: Pick<Infrastructure, 'database'>,
  { orders }: { orders: Pick<OrdersService, 'payWithin' | 'announce'> },
) {
  const payments = createPaymentsService({
    db: database.db,
    deliveries: createWebhookDeliveriesRepository(),
    orders,
  })
  return { name: 'payments', handlers: createPaymentHandlers(payments) }
}
