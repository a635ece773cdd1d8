import { randomBytes } from 'node:crypto'
import type { components } from '../../../generated/openapi.js'
import type { WebhookEndpointRow } from '../../db/schema.js'
import { assertValidFields, conflict, notFound } from '../../platform/errors.js'
import { type PageRequest, pagePagination } from '../../platform/pagination.js'
import type { SecretBox } from '../../platform/secret-box.js'
import type { TargetGuard } from './webhook-targets.js'
import type { DeliveryLogRow, EndpointChanges, WebhooksRepository } from './webhooks-repository.js'

type WebhookEndpoint = components['schemas']['WebhookEndpoint']
type WebhookDelivery = components['schemas']['WebhookDelivery']
type EndpointCreate = components['schemas']['WebhookEndpointCreate']
type EndpointUpdate = components['schemas']['WebhookEndpointUpdate']

/** Secret bytes: Standard Webhooks asks for 24 to 64. */
const SECRET_BYTES = 32

export function createWebhooksService({
  repository,
  guard,
  secrets,
}: {
  repository: WebhooksRepository
  guard: TargetGuard
  secrets: SecretBox
}) {
  /** The URL as it will be called (parsed and written out again), once it has passed. */
  async function allowedUrl(url: string): Promise<string> {
    assertValidFields({ url: await guard.problemAtSave(url) })
    return new URL(url).href
  }

  async function endpointOf(id: number): Promise<WebhookEndpointRow> {
    const endpoint = await repository.findEndpoint(id)
    if (!endpoint) throw notFound(`No webhook endpoint ${id}`)
    return endpoint
  }

  return {
    /** Stores an endpoint with a new secret, which only this answer shows. */
    async create({ url, events, description }: EndpointCreate) {
      const secret = `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`
      const row = await repository.insertEndpoint({
        url: await allowedUrl(url),
        events: [...new Set(events)],
        description: description ?? null,
        sealedSecret: secrets.seal(secret),
      })
      return { ...toEndpoint(row), secret }
    },

    async page(page: PageRequest) {
      const { items, total } = await repository.pageEndpoints(page)
      return { items: items.map(toEndpoint), pagination: pagePagination(page, total) }
    },

    get: async (id: number) => toEndpoint(await endpointOf(id)),

    async update(id: number, { url, events, description, enabled }: EndpointUpdate) {
      const changes: EndpointChanges = {
        ...(url !== undefined && { url: await allowedUrl(url) }),
        ...(events !== undefined && { events: [...new Set(events)] }),
        ...(description !== undefined && { description }),
        ...(enabled !== undefined && { enabled }),
      }
      const row = await repository.updateEndpoint(id, changes)
      if (!row) throw notFound(`No webhook endpoint ${id}`)
      return toEndpoint(row)
    },

    async remove(id: number): Promise<void> {
      if (!(await repository.deleteEndpoint(id))) throw notFound(`No webhook endpoint ${id}`)
    },

    async deliveries(id: number, page: PageRequest) {
      await endpointOf(id)
      const { items, total } = await repository.pageDeliveries(id, page)
      return { items: items.map(toDelivery), pagination: pagePagination(page, total) }
    },

    /** Due now, for one attempt more; refused while the endpoint is disabled. */
    async retry(id: number, deliveryId: number): Promise<WebhookDelivery> {
      const endpoint = await endpointOf(id)
      if (!endpoint.enabled) throw conflict(`Webhook endpoint ${id} is disabled; enable it first`)
      const delivery = await repository.retry(id, deliveryId)
      if (!delivery) throw notFound(`Webhook endpoint ${id} has no delivery ${deliveryId}`)
      return toDelivery(delivery)
    },
  }
}

export type WebhooksService = ReturnType<typeof createWebhooksService>

function toEndpoint(row: WebhookEndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    description: row.description,
    enabled: row.enabled,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  }
}

function toDelivery(row: DeliveryLogRow): WebhookDelivery {
  return {
    id: row.id,
    eventId: row.eventId,
    type: row.type,
    status: row.status,
    attempts: row.attempts,
    lastStatusCode: row.lastStatusCode,
    lastError: row.lastError,
    nextAttemptAt: row.status === 'pending' ? row.nextAttemptAt.toISOString() : null,
  }
}
