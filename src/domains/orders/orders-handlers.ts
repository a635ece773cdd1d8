import { defaulted, type ServiceHandlers } from '../../http/operations.js'
import { ifMatchOf } from '../../http/preconditions.js'
import { principalOf } from '../../http/security.js'
import type { Order } from './orders-repository.js'
import type { OrdersService } from './orders-service.js'

export function createOrderHandlers(orders: OrdersService) {
  return {
    async listOrders(request) {
      const { page, limit, status } = request.query
      const result = await orders.page(principalOf(request), {
        page: defaulted(page, 'page'),
        limit: defaulted(limit, 'limit'),
        status,
      })
      return { data: result.items, pagination: result.pagination }
    },

    async createOrder(request, reply) {
      const { order, replayed } = await orders.place(
        principalOf(request),
        request.body.items,
        request.headers['idempotency-key'],
      )
      reply.code(201).header('location', `/orders/${order.id}`)
      if (replayed) reply.header('idempotent-replayed', 'true')
      return { data: order }
    },

    async getOrder(request) {
      return { data: await orders.get(principalOf(request), request.params.id) }
    },

    async updateOrderStatus(request, reply) {
      reply.representsResource = true
      const { id } = request.params
      // The order as its GET answers it: as the service has it (orders-repository.ts).
      const check = ifMatchOf(request, (order: Order) => ({ data: order }))
      return { data: await orders.setStatus(principalOf(request), id, request.body.status, check) }
    },

    async cancelOrder(request) {
      return { data: await orders.cancel(principalOf(request), request.params.id) }
    },
  } satisfies Partial<ServiceHandlers>
}
