import type { OrderStatus } from './orders-repository.js'

/** The status graph: where an order may go from each status. */
const NEXT: Record<OrderStatus, readonly OrderStatus[]> = {
  PENDING: ['PAID', 'CANCELLED'],
  PAID: ['SHIPPED', 'CANCELLED'],
  SHIPPED: ['DELIVERED'],
  DELIVERED: [],
  CANCELLED: [],
}

export const canMove = (from: OrderStatus, to: OrderStatus) => NEXT[from].includes(to)

/** Every move of the graph goes to a status later in this list: the graph has no cycle. */
const IN_ORDER: readonly OrderStatus[] = ['PENDING', 'PAID', 'SHIPPED', 'DELIVERED', 'CANCELLED']

/** Whether an order in `status` has moved on from `than` (an order reaches each status once). */
export const isLaterStatus = (status: OrderStatus, than: OrderStatus) =>
  IN_ORDER.indexOf(status) > IN_ORDER.indexOf(than)

/** What the owner is told when their order reaches a status. */
export function statusNotice(orderId: number, status: OrderStatus) {
  const said: Record<OrderStatus, string> = {
    PENDING: 'was placed',
    PAID: 'is paid',
    SHIPPED: 'has shipped',
    DELIVERED: 'was delivered',
    CANCELLED: 'was cancelled',
  }
  return {
    kind: `order.${status.toLowerCase()}`,
    title: `Order #${orderId} ${said[status]}`,
    body:
      status === 'CANCELLED'
        ? `Your order #${orderId} ${said[status]}; its items are back in stock.`
        : `Your order #${orderId} ${said[status]}.`,
  }
}
