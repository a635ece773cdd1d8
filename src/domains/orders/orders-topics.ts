import type { Topic } from '../../platform/infrastructure/events.js'
import type { Order } from './orders-repository.js'

export interface OrderUpdatedEvent {
  orderUpdated: Order
}

/** An order as it was placed. */
export interface OrderCreatedEvent {
  orderCreated: Order
}

/** Each order's changes on a topic of their own: an event reaches only its followers. */
export const orderTopics = {
  created: (orderId: number): Topic<OrderCreatedEvent> => `order/${orderId}/created`,
  updated: (orderId: number): Topic<OrderUpdatedEvent> => `order/${orderId}/updated`,
}
