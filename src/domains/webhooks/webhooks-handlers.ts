import { defaulted, type ServiceHandlers } from '../../http/operations.js'
import { NO_STORE } from '../auth/auth-handlers.js'
import type { WebhooksService } from './webhooks-service.js'

export function createWebhookHandlers(webhooks: WebhooksService) {
  const pageOf = ({ page, limit }: { page?: number; limit?: number }) => ({
    page: defaulted(page, 'page'),
    limit: defaulted(limit, 'limit'),
  })
  return {
    async listWebhookEndpoints(request) {
      const { items, pagination } = await webhooks.page(pageOf(request.query))
      return { data: items, pagination }
    },

    async createWebhookEndpoint(request, reply) {
      const endpoint = await webhooks.create(request.body)
      // The secret is in this answer only: no cache may keep it.
      reply
        .code(201)
        .header('location', `/webhook-endpoints/${endpoint.id}`)
        .header('cache-control', NO_STORE)
      return { data: endpoint }
    },

    async getWebhookEndpoint(request) {
      return { data: await webhooks.get(request.params.id) }
    },

    async updateWebhookEndpoint(request) {
      return { data: await webhooks.update(request.params.id, request.body) }
    },

    async deleteWebhookEndpoint(request, reply) {
      await webhooks.remove(request.params.id)
      return reply.code(204).send()
    },

    async listWebhookDeliveries(request) {
      const { items, pagination } = await webhooks.deliveries(
        request.params.id,
        pageOf(request.query),
      )
      return { data: items, pagination }
    },

    async retryWebhookDelivery(request, reply) {
      const { id, deliveryId } = request.params
      const delivery = await webhooks.retry(id, deliveryId)
      reply.code(202)
      return { data: delivery }
    },
  } satisfies Partial<ServiceHandlers>
}
