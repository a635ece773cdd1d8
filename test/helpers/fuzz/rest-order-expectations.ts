import { gt, inArray } from 'drizzle-orm'
import { expect } from 'vitest'
import { notifications, orders, products } from '../../../src/db/schema.js'
import type { OperationId } from '../../../src/http/operations.js'
import type { StoredOrder, StoredRows } from './database-state.js'
import { ifMatchHolds } from './if-match.js'
import {
  canMove,
  newestOrdersFirst,
  notificationOf,
  type Order,
  type OrderLine,
  type OrderStatus,
  orderOf,
  pageFigures,
  pageOf,
  placement,
  totalCents,
} from './orders-model.js'
import type { Expectation, ValidExchange } from './rest-expectations.js'
import { accountOf, type KeyedOrder, keyedOrderName, type World } from './world.js'

/** The signed-in caller's account: these operations serve no one else. */
const accountOfCaller = ({ world, caller }: ValidExchange) => accountOf(world, caller)

/** True for a 304, which only a client holding an ETag gets; else the answer is 200. */
export function notModified({ response, inputs }: ValidExchange): boolean {
  if (response.status === 304) {
    expect(inputs.header['If-None-Match'], 'a 304 to a client without an ETag').toBeDefined()
    return true
  }
  expect(response.status, response.text).toBe(200)
  return false
}

/** The order as the caller may see it, or the status refusing it: 404 none, 403 another's. */
function visibleOrder(exchange: ValidExchange): StoredOrder | 403 | 404 {
  const order = exchange.before.orders.get(exchange.inputs.path.id as number)
  if (!order) return 404
  const own = order.userId === accountOfCaller(exchange).id
  return exchange.caller === 'admin' || own ? order : 403
}

/** Each item's product holds `sign` × its quantity more than it did before the request. */
async function expectStockMoved(
  world: World,
  before: StoredRows,
  items: readonly OrderLine[],
  sign: 1 | -1 | 0,
) {
  if (items.length === 0) return
  const ids = items.map((item) => item.productId)
  const stock = new Map(
    (await world.db.select().from(products).where(inArray(products.id, ids))).map((row) => [
      row.id,
      row.stock,
    ]),
  )
  for (const { productId, quantity } of items) {
    const was = before.products.get(productId)?.stock ?? 0
    expect(stock.get(productId), `stock of product ${productId}`).toBe(was + sign * quantity)
  }
}

/** The owner is told of a status change: one notification more, of the change's kind. */
async function expectNotified(world: World, before: StoredRows, userId: number, kind: string) {
  const newest = Math.max(0, ...before.notifications.keys())
  const added = await world.db.select().from(notifications).where(gt(notifications.id, newest))
  expect(added.map((each) => [each.userId, each.kind])).toEqual([[userId, kind]])
}

/**
 * A change of status asked of an order: refused (404, 403, 412 for an If-Match that
 * does not hold, 409 off the graph), or made.
 */
async function expectMove(exchange: ValidExchange, to: OrderStatus) {
  const { response, world, before } = exchange
  const order = visibleOrder(exchange)
  if (typeof order === 'number') return expect(response.status, response.text).toBe(order)
  if (!ifMatchHolds(exchange)) return
  if (!canMove(order.status, to)) {
    return expect(response.status, `${order.status} cannot become ${to}`).toBe(409)
  }
  expect(response.status, response.text).toBe(200)
  const { updatedAt, ...rest } = orderOf(order)
  expect(response.body.data).toMatchObject({ ...rest, status: to })
  expect(Date.parse(response.body.data.updatedAt)).toBeGreaterThanOrEqual(Date.parse(updatedAt))
  // Cancelled, its items go back to stock: once, as this one change.
  await expectStockMoved(world, before, order.items, to === 'CANCELLED' ? 1 : 0)
  await expectNotified(world, before, order.userId, `order.${to.toLowerCase()}`)
}

/** "The same body" as the service compares it: the lines as sent, in order. */
const linesText = (lines: readonly OrderLine[]) =>
  JSON.stringify(lines.map(({ productId, quantity }) => [productId, quantity]))

/** A key used before: its first answer again and nothing placed, or 422 for another body. */
async function expectReplay(exchange: ValidExchange, first: KeyedOrder, lines: OrderLine[]) {
  const { response, world, before } = exchange
  if (first.lines !== linesText(lines)) {
    return expect(response.status, 'a key used again with another body').toBe(422)
  }
  expect(response.status, response.text).toBe(201)
  expect(response.body.data).toEqual(first.order)
  expect(response.headers.get('idempotent-replayed')).toBe('true')
  expect(response.headers.get('location')).toBe(`/orders/${(first.order as Order).id}`)
  expect(await world.db.$count(orders), 'a replay placed an order').toBe(before.orders.size)
  await expectStockMoved(world, before, lines, 0)
}

/** What the orders' operations answer valid requests from the callers they serve. */
export const orderExpectations = {
  listOrders(exchange) {
    const { response, inputs, before, caller } = exchange
    const { page = 1, limit = 10, status } = inputs.query as Record<string, any>
    if (notModified(exchange)) return
    const ownerId = accountOfCaller(exchange).id
    const listed = [...before.orders.values()]
      .filter((order) => caller === 'admin' || order.userId === ownerId)
      .filter((order) => status === undefined || order.status === status)
      .sort(newestOrdersFirst)
    expect(response.body).toEqual({
      data: pageOf(listed, page, limit).map(orderOf),
      pagination: pageFigures(page, limit, listed.length),
    })
  },

  async createOrder(exchange) {
    const { response, inputs, before, world } = exchange
    const lines = (inputs.body as { items: OrderLine[] }).items
    const key = inputs.header['Idempotency-Key'] as string | undefined
    const name = key === undefined ? undefined : keyedOrderName(accountOfCaller(exchange), key)
    const first = name === undefined ? undefined : world.keyedOrders.get(name)
    if (first) return expectReplay(exchange, first, lines)
    const expected = placement(before, lines)
    expect(response.status, response.text).toBe(expected.status)
    if (!('items' in expected)) return
    const order = response.body.data as Order
    expect(order).toMatchObject({
      userId: accountOfCaller(exchange).id,
      status: 'PENDING',
      items: expected.items,
      total: totalCents(expected.items) / 100,
      updatedAt: order.createdAt,
    })
    expect(before.orders.has(order.id), 'a new order under an old id').toBe(false)
    expect(response.headers.get('location')).toBe(`/orders/${order.id}`)
    expect(response.headers.get('idempotent-replayed')).toBeNull()
    await expectStockMoved(world, before, expected.items, -1)
    if (name) world.keyedOrders.set(name, { lines: linesText(lines), order })
  },

  getOrder(exchange) {
    const order = visibleOrder(exchange)
    if (typeof order === 'number') return expect(exchange.response.status).toBe(order)
    if (notModified(exchange)) return
    expect(exchange.response.body.data).toEqual(orderOf(order))
  },

  updateOrderStatus: (exchange) =>
    expectMove(exchange, (exchange.inputs.body as { status: OrderStatus }).status),

  cancelOrder: (exchange) => expectMove(exchange, 'CANCELLED'),
} satisfies Partial<Record<OperationId, Expectation>>

/** What the notifications' operations answer: each user's own, and no one else's. */
export const notificationExpectations = {
  listNotifications(exchange) {
    const { response, inputs, before } = exchange
    const { page = 1, limit = 10, unread = false } = inputs.query as Record<string, any>
    if (notModified(exchange)) return
    const ownerId = accountOfCaller(exchange).id
    const listed = [...before.notifications.values()]
      .filter((each) => each.userId === ownerId && !(unread && each.read))
      .sort((a, b) => b.id - a.id)
    expect(response.body).toEqual({
      data: pageOf(listed, page, limit).map(notificationOf),
      pagination: pageFigures(page, limit, listed.length),
    })
  },

  markNotificationRead(exchange) {
    const { response, inputs, before } = exchange
    const notification = before.notifications.get(inputs.path.id as number)
    // Another user's is 404, as one that does not exist.
    if (notification?.userId !== accountOfCaller(exchange).id) {
      return expect(response.status, response.text).toBe(404)
    }
    expect(response.status, response.text).toBe(200)
    expect(response.body.data).toEqual({ ...notificationOf(notification), read: true })
  },
} satisfies Partial<Record<OperationId, Expectation>>
