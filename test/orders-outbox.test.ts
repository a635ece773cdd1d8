import { eq, inArray, sql } from 'drizzle-orm'
import type { Client } from 'graphql-ws'
import { pino } from 'pino'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { outbox as outboxTable, users } from '../src/db/schema.js'
import { createInventory } from '../src/domains/catalog/inventory.js'
import { createNotificationsRepository } from '../src/domains/notifications/notifications-repository.js'
import { createNotificationsService } from '../src/domains/notifications/notifications-service.js'
import { notificationTopics } from '../src/domains/notifications/notifications-topics.js'
import { createOrdersRepository } from '../src/domains/orders/orders-repository.js'
import { createOrdersService } from '../src/domains/orders/orders-service.js'
import { type OrderUpdatedEvent, orderTopics } from '../src/domains/orders/orders-topics.js'
import { createIdempotencyKeys } from '../src/platform/infrastructure/idempotency.js'
import { createOutbox, type PendingEvent } from '../src/platform/infrastructure/outbox.js'
import { backends } from './helpers/backends.js'
import { collect, subscriptionsActive, wsClient } from './helpers/graphql.js'
import { redisUrl } from './helpers/redis.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'

/**
 * Order events go through the transactional outbox: a status change that rolls back
 * publishes nothing, one committed by an instance that died before publishing is
 * relayed by another, and a subscriber never sees one event twice.
 */

const ORDER_UPDATED = `subscription OrderUpdated($orderId: ID!) {
  orderUpdated(orderId: $orderId) { id status updatedAt }
}`
const NOTIFICATION_ADDED = 'subscription { notificationAdded { id kind } }'

interface OrderUpdate {
  orderUpdated: { id: string; status: string; updatedAt: string }
}
interface NotificationAdded {
  notificationAdded: { id: string; kind: string }
}

const variants = backends.flatMap((backend) => [
  { backend, label: `${backend.name}, in-process bus`, environment: {} as Record<string, string> },
  ...(redisUrl
    ? [{ backend, label: `${backend.name}, Redis bus`, environment: { REDIS_URL: redisUrl } }]
    : []),
])

describe.each(variants)('order events through the outbox on $label', ({ backend, environment }) => {
  let server: TestServer
  let admin: string
  let productId: number
  const clients: Client[] = []
  const db = () => server.testDatabase.database.db

  beforeAll(async () => {
    server = await startServer(backend, environment)
    admin = (await login(server.api, ADMIN)).accessToken
    const product = await server.api.post('/products', {
      json: { name: 'Outbox lamp', price: 3, category: 'orders-outbox', stock: 1000 },
      token: admin,
    })
    expect(product.status, product.text).toBe(201)
    productId = product.body.data.id
  })
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.dispose()))
    // Each test starts with no live subscription, so its subscriptionsActive counts are its own.
    await expect.poll(() => server.events.activeSubscriptions()).toBe(0)
  })
  afterAll(() => server?.close())

  /** A fresh user's PENDING order, followed live by that user: its updates, their notifications. */
  async function followedOrder() {
    const owner = await newUser(server.api)
    const placed = await server.api.post('/orders', {
      json: { items: [{ productId, quantity: 1 }] },
      token: owner.accessToken,
    })
    expect(placed.status, placed.text).toBe(201)
    const orderId: number = placed.body.data.id
    const client = wsClient(server.baseUrl, { authToken: owner.accessToken })
    clients.push(client)
    const updates = collect<OrderUpdate>(client, ORDER_UPDATED, { orderId: String(orderId) })
    const notifications = collect<NotificationAdded>(client, NOTIFICATION_ADDED)
    await subscriptionsActive(server.events, 2)
    // The order as it is comes first: from here on, only its changes.
    expect((await updates.until(1)).map((item) => item.orderUpdated.status)).toEqual(['PENDING'])
    const topics = [orderTopics.updated(orderId), notificationTopics.added(owner.user.id)]
    return { owner, orderId, updates, notifications, topics }
  }
  const moveTo = (id: number, status: string) =>
    server.api.patch(`/orders/${id}`, { json: { status }, token: admin })
  const outboxRows = (topics: string[]) =>
    db()
      .select()
      .from(outboxTable)
      .where(inArray(outboxTable.topic, topics))
      .orderBy(outboxTable.id)
  const storedNotifications = async (token: string) =>
    (await server.api.get('/notifications', { token })).body.data as { id: number; kind: string }[]

  /**
   * Orders as another instance over the same database serves them, one that dies right
   * after each commit: its events are in the outbox, and it never publishes them.
   */
  function instanceThatDiesAfterCommit() {
    const realOutbox = createOutbox({
      db: db(),
      publishWaitMs: 100,
      events: server.events,
      log: pino({ level: 'silent' }),
    })
    const neverPublished: PendingEvent[] = []
    const outbox = {
      enqueue: realOutbox.enqueue,
      publish: async (pending: readonly PendingEvent[]) => {
        neverPublished.push(...pending)
      },
    }
    const notifications = createNotificationsService({
      notifications: createNotificationsRepository(db()),
      outbox,
    })
    const orders = createOrdersService({
      db: db(),
      orders: createOrdersRepository(db()),
      // Its own cache, of nothing: a payment gives no stock back.
      inventory: createInventory({ invalidate: async () => {} }),
      notifier: { notify: notifications.notify },
      outbox,
      idempotencyKeys: createIdempotencyKeys(),
    })
    return { orders, neverPublished }
  }

  it('publishes nothing of a status change that rolled back at its commit', async () => {
    const { owner, orderId, updates, notifications, topics } = await followedOrder()
    // Fails the transaction at COMMIT: after the service wrote the change, the
    // notification and both outbox rows, as late as a transaction can fail.
    const name = `refuse_order_${orderId}`
    await db().execute(
      sql.raw(`create function ${name}() returns trigger language plpgsql as $$
        begin raise exception 'order ${orderId} may not commit'; end $$`),
    )
    await db().execute(
      sql.raw(`create constraint trigger ${name} after update on orders
        deferrable initially deferred for each row when (new.id = ${orderId})
        execute function ${name}()`),
    )
    const failed = await moveTo(orderId, 'PAID')
    expect(failed.status, failed.text).toBe(500)
    expect(failed.body.error.code).toBe('INTERNAL')
    expect(failed.text).not.toContain('may not commit')
    const read = await server.api.get(`/orders/${orderId}`, { token: owner.accessToken })
    expect(read.body.data.status).toBe('PENDING')
    expect(await storedNotifications(owner.accessToken)).toEqual([])
    expect(await outboxRows(topics)).toEqual([])

    await db().execute(sql.raw(`drop trigger ${name} on orders`))
    await db().execute(sql.raw(`drop function ${name}()`))
    const paid = await moveTo(orderId, 'PAID')
    expect(paid.status, paid.text).toBe(200)
    // The committed change's events are the barrier: any of the rolled-back one would
    // have come first, and be the one these find.
    const [stored] = await storedNotifications(owner.accessToken)
    expect((await updates.until(2)).slice(1)).toEqual([
      {
        orderUpdated: { id: String(orderId), status: 'PAID', updatedAt: paid.body.data.updatedAt },
      },
    ])
    expect(await notifications.until(1)).toEqual([
      { notificationAdded: { id: String(stored?.id), kind: 'order.paid' } },
    ])
  })

  it('delivers an order event committed by an instance that died before publishing it', async () => {
    const { orderId, updates, notifications, topics } = await followedOrder()
    const [adminRow] = await db().select().from(users).where(eq(users.email, ADMIN.email))
    const dead = instanceThatDiesAfterCommit()
    const paid = await dead.orders.setStatus(
      { userId: adminRow?.id ?? 0, role: 'admin' },
      orderId,
      'PAID',
    )
    expect(dead.neverPublished).toHaveLength(2)
    // No one nudges a relay: the running server's finds the stragglers on its own.
    expect((await updates.until(2)).slice(1)).toEqual([
      {
        orderUpdated: { id: String(orderId), status: 'PAID', updatedAt: paid.updatedAt },
      },
    ])
    expect((await notifications.until(1)).map((item) => item.notificationAdded.kind)).toEqual([
      'order.paid',
    ])
    // Deleted in the relay's transaction, which commits just after it delivered.
    await expect.poll(() => outboxRows(topics)).toEqual([])
  })

  it('hands a subscriber an order event once, however often it is published', async () => {
    const { orderId, updates } = await followedOrder()
    const [adminRow] = await db().select().from(users).where(eq(users.email, ADMIN.email))
    const dead = instanceThatDiesAfterCommit()
    await dead.orders.setStatus({ userId: adminRow?.id ?? 0, role: 'admin' }, orderId, 'PAID')
    const topic = orderTopics.updated(orderId)
    const event = dead.neverPublished.find((pending) => pending.topic === topic)
    if (!event) throw new Error(`no event on ${topic}`)
    // At least once: its publisher, and a relay, each died before deleting it (and the
    // running server's relay publishes it a third time).
    for (let again = 0; again < 2; again += 1) {
      await server.events.deliver(topic, event.payload as OrderUpdatedEvent, event.id)
    }
    await updates.until(2)
    // A later event, the barrier: a repeat would have arrived before it.
    expect((await moveTo(orderId, 'SHIPPED')).status).toBe(200)
    await updates.until(3)
    expect(updates.items.map((item) => item.orderUpdated.status)).toEqual([
      'PENDING',
      'PAID',
      'SHIPPED',
    ])
  })
})
