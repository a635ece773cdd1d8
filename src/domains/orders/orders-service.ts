import type { Database, Executor } from '../../db/database.js'
import { conflict, forbidden, notFound, unprocessable } from '../../platform/errors.js'
import type { Principal } from '../../platform/infrastructure/access-tokens.js'
import type { IdempotencyKeys } from '../../platform/infrastructure/idempotency.js'
import type { Outbox, PendingEvent } from '../../platform/infrastructure/outbox.js'
import { type PageRequest, pagePagination } from '../../platform/pagination.js'
import type { Inventory, PricedLine, StockLine } from '../catalog/inventory.js'
import { canMove, statusNotice } from './order-status.js'
import type { Order, OrderStatus, OrdersRepository } from './orders-repository.js'
import { orderTopics } from './orders-topics.js'

/** What the orders domain needs of notifications: to tell an owner, in its transaction. */
export interface Notifier {
  notify(
    executor: Executor,
    notification: { userId: number; kind: string; title: string; body: string },
  ): Promise<PendingEvent>
}

/** A status change made in a transaction, to announce once that has committed. */
export interface StatusChange {
  order: Order
  events: PendingEvent[]
  restocked: StockLine[]
}

interface Dependencies {
  db: Database
  orders: OrdersRepository
  inventory: Inventory
  notifier: Notifier
  outbox: Pick<Outbox, 'enqueue' | 'publish'>
  idempotencyKeys: IdempotencyKeys
}

/** What numeric(14, 2) holds, in cents. */
const MAX_TOTAL_CENTS = 99_999_999_999_999

export function createOrdersService(dependencies: Dependencies) {
  const { db, orders, inventory, notifier, outbox, idempotencyKeys } = dependencies

  async function lockedOrder(executor: Executor, id: number): Promise<Order> {
    const order = await orders.findById(executor, id)
    if (!order) throw new Error(`Order ${id} vanished under its lock`)
    return order
  }

  /** Moves a locked order to `to`, with what follows: stock back, the owner told, events. */
  async function changeStatus(
    executor: Executor,
    id: number,
    to: OrderStatus,
  ): Promise<StatusChange> {
    await orders.setStatus(executor, id, to)
    const order = await lockedOrder(executor, id)
    const restocked = to === 'CANCELLED' ? order.items : []
    await inventory.restore(executor, restocked)
    const notified = await notifier.notify(executor, {
      userId: order.userId,
      ...statusNotice(id, to),
    })
    const updated = await outbox.enqueue(executor, orderTopics.updated(id), { orderUpdated: order })
    return { order, events: [updated, notified], restocked }
  }

  /** After the commit of a status change: its events go out, no cache keeps the old stock. */
  async function announce(change: StatusChange | undefined): Promise<void> {
    if (!change) return
    await outbox.publish(change.events)
    await inventory.changed(change.restocked)
  }

  /**
   * A change asked by a caller: the owner or an admin, along the graph only. `check`,
   * when given, is made on the order as it is, under its lock, before the graph's rule.
   */
  async function move(
    caller: Principal,
    id: number,
    to: OrderStatus,
    check?: (current: Order) => void,
  ): Promise<Order> {
    const change = await db.transaction(async (tx) => {
      const current = await orders.lockStatus(tx, id)
      if (!current) throw notFound(`Order ${id} does not exist`)
      assertMayAccess(caller, current.userId, id)
      check?.(await lockedOrder(tx, id))
      if (!canMove(current.status, to)) {
        throw conflict(`Order ${id} is ${current.status}; it cannot become ${to}`)
      }
      return changeStatus(tx, id, to)
    })
    await announce(change)
    return change.order
  }

  return {
    /**
     * Places an order, its stock taken in the same transaction. With a key, a repeat of
     * the same request replays the first answer instead (`replayed`).
     */
    async place(
      caller: Principal,
      lines: readonly StockLine[],
      idempotencyKey?: string,
    ): Promise<{ order: Order; replayed: boolean }> {
      const body = lines.map(({ productId, quantity }) => [productId, quantity])
      const keyed = idempotencyKey && { userId: caller.userId, key: idempotencyKey, body }
      const merged = mergeLines(lines)
      const placed = await db.transaction(async (tx) => {
        const first = keyed && (await idempotencyKeys.claim(tx, keyed))
        if (first) return { order: first.body as Order, replayed: true, events: [] }
        const priced = await inventory.reserve(tx, merged)
        const order = await orders.insert(tx, {
          userId: caller.userId,
          lines: priced,
          total: totalOf(priced),
        })
        if (keyed) await idempotencyKeys.remember(tx, keyed, { statusCode: 201, body: order })
        const created = await outbox.enqueue(tx, orderTopics.created(order.id), {
          orderCreated: order,
        })
        return { order, replayed: false, events: [created] }
      })
      if (!placed.replayed) {
        await outbox.publish(placed.events)
        await inventory.changed(merged)
      }
      return { order: placed.order, replayed: placed.replayed }
    },

    /** The caller's orders; an admin's list holds every user's. */
    async page(caller: Principal, page: PageRequest & { status?: OrderStatus | undefined }) {
      const userId = caller.role === 'admin' ? undefined : caller.userId
      const { items, total } = await orders.page({ userId, status: page.status }, page)
      return { items, pagination: pagePagination(page, total) }
    },

    async get(caller: Principal, id: number): Promise<Order> {
      const order = await orders.findById(db, id)
      if (!order) throw notFound(`Order ${id} does not exist`)
      assertMayAccess(caller, order.userId, id)
      return order
    },

    /** An admin's change along the graph; `check` as for move. */
    setStatus: (caller: Principal, id: number, to: OrderStatus, check?: (current: Order) => void) =>
      move(caller, id, to, check),

    cancel: (caller: Principal, id: number) => move(caller, id, 'CANCELLED'),

    /**
     * A payment, in the transaction of the webhook that reports it: a PENDING order
     * becomes PAID; any other, or none, is left as it is (undefined). Announce the
     * change after the commit.
     */
    async payWithin(executor: Executor, id: number): Promise<StatusChange | undefined> {
      const current = await orders.lockStatus(executor, id)
      if (current?.status !== 'PENDING') return undefined
      return changeStatus(executor, id, 'PAID')
    },

    announce,
  }
}

export type OrdersService = ReturnType<typeof createOrdersService>

function assertMayAccess(caller: Principal, ownerId: number, orderId: number): void {
  if (caller.role !== 'admin' && caller.userId !== ownerId) {
    throw forbidden(`Order ${orderId} is another user's`)
  }
}

/** One line per product, of the summed quantities, in product order. */
function mergeLines(lines: readonly StockLine[]): StockLine[] {
  const quantities = new Map<number, number>()
  for (const { productId, quantity } of lines) {
    quantities.set(productId, (quantities.get(productId) ?? 0) + quantity)
  }
  return [...quantities]
    .map(([productId, quantity]) => ({ productId, quantity }))
    .sort((a, b) => a.productId - b.productId)
}

/** Summed in cents, so that 0.1 + 0.2 is 0.3; beyond what an order holds is refused. */
function totalOf(lines: readonly PricedLine[]): number {
  const cents = lines.reduce(
    (sum, line) => sum + Math.round(line.unitPrice * 100) * line.quantity,
    0,
  )
  if (cents > MAX_TOTAL_CENTS) {
    throw unprocessable(`The total may be at most ${MAX_TOTAL_CENTS / 100}`)
  }
  return cents / 100
}
