import { and, count, desc, eq, getTableColumns, sql } from 'drizzle-orm'
import type { components } from '../../../generated/openapi.js'
import type { Database, Executor } from '../../db/database.js'
import { type OrderRow, orderItems, orders, users } from '../../db/schema.js'
import { accountGone } from '../../platform/infrastructure/live-accounts.js'
import { offsetOf, type PageRequest } from '../../platform/pagination.js'
import type { PricedLine } from '../catalog/inventory.js'

/** An order as both APIs show it and the bus carries it (JSON). */
export type Order = components['schemas']['Order']
export type OrderItem = components['schemas']['OrderItem']
export type OrderStatus = components['schemas']['OrderStatus']

export interface OrderQuery {
  /** Only this user's orders; every user's when undefined. */
  userId?: number | undefined
  status?: OrderStatus | undefined
}

/** The order's items as JSON, in one column of the order's own row. */
const itemsOfOrder = sql<OrderItem[]>`(
  select coalesce(json_agg(json_build_object(
    'productId', ${orderItems.productId},
    'quantity', ${orderItems.quantity},
    'unitPrice', ${orderItems.unitPrice}::float8
  ) order by ${orderItems.productId}), '[]')
  from ${orderItems} where ${orderItems.orderId} = ${orders.id}
)`
const withItems = { ...getTableColumns(orders), items: itemsOfOrder }

export function createOrdersRepository(db: Database) {
  const matching = ({ userId, status }: OrderQuery) =>
    and(
      userId === undefined ? undefined : eq(orders.userId, userId),
      status === undefined ? undefined : eq(orders.status, status),
    )

  return {
    /** Stores a placed order and its lines, in the caller's transaction. */
    async insert(
      executor: Executor,
      { userId, lines, total }: { userId: number; lines: readonly PricedLine[]; total: number },
    ): Promise<Order> {
      // Placed only while the account exists, which then stays until the transaction ends
      // (the key-share lock a foreign key would take): an order outlives its account, so
      // its table has no foreign key to take it.
      const [account] = await executor
        .select({ id: users.id })
        .from(users)
        .where(eq(users.id, userId))
        .for('key share')
      if (!account) throw accountGone()
      const [row] = await executor.insert(orders).values({ userId, total }).returning()
      if (!row) throw new Error('INSERT … RETURNING gave no row')
      await executor.insert(orderItems).values(lines.map((line) => ({ ...line, orderId: row.id })))
      const items = [...lines].sort((a, b) => a.productId - b.productId)
      return toOrder({ ...row, items })
    },

    async findById(executor: Executor, id: number): Promise<Order | undefined> {
      const [row] = await executor.select(withItems).from(orders).where(eq(orders.id, id))
      return row && toOrder(row)
    },

    /** The order's owner and status, its row locked until the caller's transaction ends. */
    async lockStatus(executor: Executor, id: number) {
      const [row] = await executor
        .select({ userId: orders.userId, status: orders.status })
        .from(orders)
        .where(eq(orders.id, id))
        .for('update')
      return row
    },

    async setStatus(executor: Executor, id: number, status: OrderStatus): Promise<void> {
      await executor.update(orders).set({ status, updatedAt: sql`now()` }).where(eq(orders.id, id))
    },

    /** A numbered page, newest first, and how many match in all. */
    async page(query: OrderQuery, page: PageRequest) {
      const [rows, [counted]] = await Promise.all([
        db
          .select(withItems)
          .from(orders)
          .where(matching(query))
          .orderBy(desc(orders.createdAt), desc(orders.id))
          .limit(page.limit)
          .offset(offsetOf(page)),
        db.select({ total: count() }).from(orders).where(matching(query)),
      ])
      return { items: rows.map(toOrder), total: counted?.total ?? 0 }
    },
  }
}

export type OrdersRepository = ReturnType<typeof createOrdersRepository>

function toOrder(row: OrderRow & { items: OrderItem[] }): Order {
  return {
    id: row.id,
    userId: row.userId,
    status: row.status,
    items: row.items.map(({ productId, quantity, unitPrice }) => ({
      productId,
      quantity,
      unitPrice,
    })),
    total: row.total,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  }
}
