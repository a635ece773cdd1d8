import type { Database } from '../../db/database.js'
import { assertValidFields } from '../../platform/errors.js'
import type { OrdersService } from '../orders/orders-service.js'
import type { WebhookDeliveriesRepository } from './webhook-deliveries-repository.js'

const SOURCE = 'payments'

/** The payment provider's event, as its webhook carries it. */
export interface PaymentEvent {
  id: string
  type: string
  data: { orderId?: number | undefined }
}

export interface Receipt {
  id: string
  duplicate: boolean
  applied: boolean
}

interface Dependencies {
  db: Database
  deliveries: WebhookDeliveriesRepository
  orders: Pick<OrdersService, 'payWithin' | 'announce'>
}

export function createPaymentsService({ db, deliveries, orders }: Dependencies) {
  return {
    /**
     * Applies an event once: its record and its effect commit together, so a repeat, on
     * any instance, finds it and changes nothing. What cannot apply is acknowledged. An
     * event is known by the id its body carries, which the signature covers: the
     * delivery's header id is not signed, and a captured delivery re-sent under a new one
     * is the same event.
     */
    async receive(deliveryId: string, event: PaymentEvent): Promise<Receipt> {
      const { orderId } = event.data
      const paid = event.type === 'payment.succeeded'
      assertValidFields({
        'data.orderId':
          paid && orderId === undefined ? 'is required by payment.succeeded' : undefined,
      })
      const delivery = { source: SOURCE, eventId: event.id, eventType: event.type }
      const outcome = await db.transaction(async (tx) => {
        const first = await deliveries.claim(tx, delivery)
        if (first) return { duplicate: true, applied: first.applied, change: undefined }
        const change =
          paid && orderId !== undefined ? await orders.payWithin(tx, orderId) : undefined
        if (change) await deliveries.markApplied(tx, delivery)
        return { duplicate: false, applied: change !== undefined, change }
      })
      await orders.announce(outcome.change)
      return { id: deliveryId, duplicate: outcome.duplicate, applied: outcome.applied }
    },
  }
}

export type PaymentsService = ReturnType<typeof createPaymentsService>
