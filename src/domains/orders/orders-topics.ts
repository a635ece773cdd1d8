import type { Topic } from '../../platform/infrastructure/events.js'
import type { Order } from './orders-repository.js'

export interface OrderUpdatedEvent {
  orderUpdated: Order
}

/** Each order's changes on a topic of their own: an event reaches only its followers. */
export const orderTopics = {
  updated: (orderId: number): Topic<OrderUpdatedEvent> => `order/${orderId}/updated`,
}
