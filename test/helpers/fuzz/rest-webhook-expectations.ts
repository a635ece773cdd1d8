import { and, count, desc, eq } from 'drizzle-orm'
import { expect } from 'vitest'
import {
  type WebhookEndpointRow,
  webhookEndpointDeliveries,
  webhookEndpoints,
} from '../../../src/db/schema.js'
import type { OperationId } from '../../../src/http/operations.js'
import { pageFigures } from './orders-model.js'
import type { Expectation, ValidExchange } from './rest-expectations.js'
import { notModified } from './rest-order-expectations.js'
import type { World } from './world.js'

/**
 * The endpoint as the spec says it is shown, written again rather than imported from the
 * webhooks domain: an oracle that shared the code it checks would agree with its bugs.
 */
const endpointOf = (row: WebhookEndpointRow) => ({
  id: row.id,
  url: row.url,
  events: row.events,
  description: row.description,
  enabled: row.enabled,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
})

const storedEndpoint = async (world: World, id: unknown) =>
  typeof id === 'number'
    ? (await world.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, id)))[0]
    : undefined

/** What a body sets, as stored: the URL as parsed, each event type once. */
function expectFieldsOf(data: Record<string, unknown>, body: Record<string, unknown>) {
  if (typeof body.url === 'string') expect(data.url).toBe(new URL(body.url).href)
  if (Array.isArray(body.events)) expect(data.events).toEqual([...new Set(body.events)])
  if (body.description !== undefined) expect(data.description).toBe(body.description)
  if (body.enabled !== undefined) expect(data.enabled).toBe(body.enabled)
}

/**
 * Webhook endpoints, on servers that allow private targets and send no delivery
 * (world.ts): every URL that keeps the documented rules is accepted, and deliveries only
 * ever pile up.
 */
export const webhookExpectations = {
  async listWebhookEndpoints(exchange) {
    if (notModified(exchange)) return
    const { page = 1, limit = 10 } = exchange.inputs.query as Record<string, any>
    const rows = await exchange.world.db
      .select()
      .from(webhookEndpoints)
      .orderBy(desc(webhookEndpoints.createdAt), desc(webhookEndpoints.id))
    expect(exchange.response.body).toEqual({
      data: rows.slice((page - 1) * limit, page * limit).map(endpointOf),
      pagination: pageFigures(page, limit, rows.length),
    })
  },

  async createWebhookEndpoint({ response, inputs, world }) {
    expect(response.status, response.text).toBe(201)
    const { secret, ...shown } = response.body.data
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/)
    expectFieldsOf(shown, inputs.body as Record<string, unknown>)
    const row = await storedEndpoint(world, shown.id)
    expect(row && endpointOf(row)).toEqual(shown)
    expect(row?.sealedSecret).not.toContain(secret.slice('whsec_'.length))
  },

  async getWebhookEndpoint(exchange) {
    const row = await storedEndpoint(exchange.world, exchange.inputs.path.id)
    if (!row) return expect(exchange.response.status).toBe(404)
    if (notModified(exchange)) return
    expect(exchange.response.body.data).toEqual(endpointOf(row))
  },

  async updateWebhookEndpoint({ response, inputs, world }) {
    const row = await storedEndpoint(world, inputs.path.id)
    if (response.status === 404) return expect(row).toBeUndefined()
    expect(response.status, response.text).toBe(200)
    expectFieldsOf(response.body.data, inputs.body as Record<string, unknown>)
    expect(row && endpointOf(row)).toEqual(response.body.data)
  },

  async deleteWebhookEndpoint({ response, inputs, world }) {
    expect([204, 404]).toContain(response.status)
    expect(await storedEndpoint(world, inputs.path.id)).toBeUndefined()
  },

  async listWebhookDeliveries(exchange) {
    const { response, inputs, world } = exchange
    const endpointId = Number(inputs.path.id)
    if (!(await storedEndpoint(world, endpointId))) return expect(response.status).toBe(404)
    if (notModified(exchange)) return
    const { page = 1, limit = 10 } = inputs.query as Record<string, any>
    const [stored] = await world.db
      .select({ n: count() })
      .from(webhookEndpointDeliveries)
      .where(eq(webhookEndpointDeliveries.endpointId, endpointId))
    // Events of earlier requests may still be on their way into the log.
    const { pagination, data } = response.body
    expect(pagination).toEqual(pageFigures(page, limit, pagination.total))
    expect(pagination.total).toBeLessThanOrEqual(stored?.n ?? 0)
    const ids = data.map((each: { id: number }) => each.id)
    expect(ids).toEqual([...ids].sort((a, b) => b - a))
  },

  async retryWebhookDelivery({ response, inputs, world }: ValidExchange) {
    const endpoint = await storedEndpoint(world, inputs.path.id)
    const [delivery] = await world.db
      .select()
      .from(webhookEndpointDeliveries)
      .where(
        and(
          eq(webhookEndpointDeliveries.id, Number(inputs.path.deliveryId)),
          eq(webhookEndpointDeliveries.endpointId, Number(inputs.path.id)),
        ),
      )
    if (!endpoint) return expect(response.status).toBe(404)
    if (!endpoint.enabled) return expect(response.status).toBe(409)
    if (!delivery) return expect(response.status).toBe(404)
    expect(response.status, response.text).toBe(202)
    expect(response.body.data).toMatchObject({ id: delivery.id, status: 'pending' })
    expect(delivery.status).toBe('pending')
    expect(delivery.attemptsAllowed).toBeGreaterThan(delivery.attempts)
  },
} satisfies Partial<Record<OperationId, Expectation>>
