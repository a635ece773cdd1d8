import { callerOf } from '../../graphql/context.js'
import { followTopic } from '../../graphql/subscriptions.js'
import { notFound } from '../../platform/errors.js'
import type { EventBus } from '../../platform/infrastructure/events.js'
import { rowIdOf } from '../../platform/input-rules.js'
import type { DomainResolvers } from '../domain-module.js'
import type { OrdersService } from './orders-service.js'
import { type OrderUpdatedEvent, orderTopics } from './orders-topics.js'

export function createOrderResolvers(orders: OrdersService, events: Pick<EventBus, 'subscribe'>) {
  /** The order the caller may see: NOT_FOUND for an id no order has, FORBIDDEN for another's. */
  function visibleOrder(caller: Parameters<OrdersService['get']>[0], id: string) {
    const orderId = rowIdOf(id)
    if (orderId === undefined) throw notFound(`Order ${id} does not exist`)
    return orders.get(caller, orderId)
  }

  return {
    Order: {
      id: (order) => String(order.id),
      userId: (order) => String(order.userId),
    },
    OrderItem: {
      productId: (item) => String(item.productId),
    },
    Query: {
      order: (_root, { id }, context) => visibleOrder(callerOf(context), id),
    },
    Subscription: {
      orderUpdated: {
        subscribe: async (_root, { orderId }, context) => {
          const order = await visibleOrder(callerOf(context), orderId)
          return followTopic(events, orderTopics.updated(order.id), context)
        },
        resolve: (event: OrderUpdatedEvent) => event.orderUpdated,
      },
    },
  } satisfies DomainResolvers
}
