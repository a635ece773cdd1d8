import { describe, expect, it } from 'vitest'
import { canMove, isLaterStatus } from '../src/domains/orders/order-status.js'
import type { OrderStatus } from '../src/domains/orders/orders-repository.js'

const STATUSES: OrderStatus[] = ['PENDING', 'PAID', 'SHIPPED', 'DELIVERED', 'CANCELLED']

// orderUpdated drops a change of a status no later than the last it sent: that is a
// repeat only while every move of the graph goes to a later status.
describe('the order status graph', () => {
  it.each(STATUSES)('moves from %s only to later statuses', (from) => {
    const moves = STATUSES.filter((to) => canMove(from, to))
    expect(moves.filter((to) => !isLaterStatus(to, from))).toEqual([])
  })

  it('ranks no status later than itself', () => {
    expect(STATUSES.filter((status) => isLaterStatus(status, status))).toEqual([])
  })
})
