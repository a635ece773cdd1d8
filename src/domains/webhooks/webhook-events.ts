import type { components } from '../../../generated/openapi.js'
import type { OutboxRow } from '../../db/schema.js'
import type { ProductChangedEvent } from '../catalog/catalog-topics.js'
import type { OrderCreatedEvent, OrderUpdatedEvent } from '../orders/orders-topics.js'

export type WebhookEventType = components['schemas']['WebhookEventType']

/** An outbox event as endpoints receive it: its type and the resource it carries. */
export interface WebhookEvent {
  type: WebhookEventType
  data: unknown
  occurredAt: Date
}

/**
 * The outbox topics that are webhook events (orders-topics.ts, catalog-topics.ts), and
 * where their payload keeps the resource: `<entity>/<id>/<change>` is `<entity>.<change>`.
 */
const SOURCES: Record<WebhookEventType, (payload: never) => unknown> = {
  'order.created': (payload: OrderCreatedEvent) => payload.orderCreated,
  'order.updated': (payload: OrderUpdatedEvent) => payload.orderUpdated,
  'product.created': (payload: ProductChangedEvent) => payload.product,
  'product.updated': (payload: ProductChangedEvent) => payload.product,
  'product.deleted': (payload: ProductChangedEvent) => payload.product,
}

const TOPIC = /^(order|product)\/[^/]+\/(created|updated|deleted)$/

function typeOf(topic: string): WebhookEventType | undefined {
  const [, entity, change] = TOPIC.exec(topic) ?? []
  const type = `${entity}.${change}`
  return type in SOURCES ? (type as WebhookEventType) : undefined
}

/** Whether an outbox topic carries webhook events. */
export const isWebhookTopic = (topic: string) => typeOf(topic) !== undefined

export function webhookEventOf(row: OutboxRow): WebhookEvent | undefined {
  const type = typeOf(row.topic)
  if (!type) return undefined
  const data = SOURCES[type](row.payload as never)
  return { type, data, occurredAt: row.createdAt }
}
