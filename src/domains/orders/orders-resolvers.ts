import { callerOf } from '../../graphql/context.js'
import { followFromRead, type StreamOrder } from '../../graphql/resumable.js'
import { notFound } from '../../platform/errors.js'
import type { EventBus } from '../../platform/infrastructure/events.js'
import { rowIdOf } from '../../platform/input-rules.js'
import type { DomainResolvers } from '../domain-module.js'
import { isLaterStatus } from './order-status.js'
import type { OrderStatus } from './orders-repository.js'
import type { OrdersService } from './orders-service.js'
import { type OrderUpdatedEvent, orderTopics } from './orders-topics.js'

/** The row id of an order's ID: NOT_FOUND when no order can have it. */
function orderIdOf(id: string): number {
  const orderId = rowIdOf(id)
  if (orderId === undefined) throw notFound(`Order ${id} does not exist`)
  return orderId
}

/**
 * An order's events, each of a later status than the one handed out before: a repeat
 * is dropped, and so is a change that arrives after a later one, which holds it.
 */
function laterStatuses(): StreamOrder<OrderUpdatedEvent> {
  let last: OrderStatus | undefined
  return {
    place: ({ orderUpdated }) =>
      last === undefined || isLaterStatus(orderUpdated.status, last) ? 'next' : 'seen',
    handedOut: ({ orderUpdated }) => {
      last = orderUpdated.status
    },
    // Never asked: no order's change waits for another.
    missedBefore: async () => [],
  }
}

export function createOrderResolvers(orders: OrdersService, events: Pick<EventBus, 'subscribe'>) {
  return {
    Order: {
      id: (order) => String(order.id),
      userId: (order) => String(order.userId),
    },
    OrderItem: {
      productId: (item) => String(item.productId),
    },
    Query: {
      order: (_root, { id }, context) => orders.get(callerOf(context), orderIdOf(id)),
    },
    Subscription: {
      orderUpdated: {
        subscribe: async (_root, { orderId }, context) => {
          const caller = callerOf(context)
          const id = orderIdOf(orderId)
          // Refused before it reaches the bus; read again once followed, to miss no change.
          await orders.get(caller, id)
          return followFromRead(events, orderTopics.updated(id), context, async () => ({
            first: [{ orderUpdated: await orders.get(caller, id) }],
            order: laterStatuses(),
          }))
        },
        resolve: (event: OrderUpdatedEvent) => event.orderUpdated,
      },
    },
  } satisfies DomainResolvers
}
