import type { components } from '../../../generated/openapi.js'
import type { NotificationRow, ProductRow } from '../../../src/db/schema.js'
import type { StoredOrder, StoredRows } from './database-state.js'

export type Order = components['schemas']['Order']
export type OrderStatus = components['schemas']['OrderStatus']
export type Notification = components['schemas']['Notification']
export interface OrderLine {
  productId: number
  quantity: number
}

/**
 * Where an order may go from each status, as openapi.yaml's OrderStatus states it:
 * `PENDING → PAID → SHIPPED → DELIVERED`, or `CANCELLED` from `PENDING` or `PAID`.
 */
const NEXT: Record<OrderStatus, OrderStatus[]> = {
  PENDING: ['PAID', 'CANCELLED'],
  PAID: ['SHIPPED', 'CANCELLED'],
  SHIPPED: ['DELIVERED'],
  DELIVERED: [],
  CANCELLED: [],
}
export const canMove = (from: OrderStatus, to: OrderStatus) => NEXT[from].includes(to)

/**
 * The most an order's total may be: what its column, numeric(14, 2), holds. openapi.yaml
 * says only "beyond what an order may hold" (422).
 */
const MAX_TOTAL_CENTS = 99_999_999_999_999

const centsOf = (price: number) => Math.round(price * 100)

/** Σ quantity × unitPrice, summed in cents as "to the cent" has it. */
export const totalCents = (items: readonly { quantity: number; unitPrice: number }[]) =>
  items.reduce((sum, item) => sum + centsOf(item.unitPrice) * item.quantity, 0)

/** One line per product, of the summed quantities, in product order (as documented). */
export function mergeLines(lines: readonly OrderLine[]): OrderLine[] {
  const quantities = new Map<number, number>()
  for (const { productId, quantity } of lines) {
    quantities.set(productId, (quantities.get(productId) ?? 0) + quantity)
  }
  return [...quantities]
    .map(([productId, quantity]) => ({ productId, quantity }))
    .sort((a, b) => a.productId - b.productId)
}

const isLive = (product: ProductRow | undefined): product is ProductRow =>
  product !== undefined && product.deletedAt === null

/**
 * How createOrder must answer lines against the stock before it: 422 for an unknown or
 * deleted product, else 409 for one short of stock, else 422 for a total too large,
 * else 201 with these items.
 */
export function placement(
  before: StoredRows,
  lines: readonly OrderLine[],
): { status: 201; items: Order['items'] } | { status: 409 | 422 } {
  const merged = mergeLines(lines).map((line) => ({
    ...line,
    product: before.products.get(line.productId),
  }))
  if (!merged.every(({ product }) => isLive(product))) return { status: 422 }
  if (merged.some(({ product, quantity }) => (product?.stock ?? 0) < quantity)) {
    return { status: 409 }
  }
  const items = merged.map(({ productId, quantity, product }) => ({
    productId,
    quantity,
    unitPrice: product?.price ?? 0,
  }))
  return totalCents(items) > MAX_TOTAL_CENTS ? { status: 422 } : { status: 201, items }
}

/** A stored order as both APIs show it (REST's JSON; GraphQL's ids are their text). */
export const orderOf = (stored: StoredOrder): Order => ({
  id: stored.id,
  userId: stored.userId,
  status: stored.status,
  items: stored.items.map(({ productId, quantity, unitPrice }) => ({
    productId,
    quantity,
    unitPrice,
  })),
  total: stored.total,
  createdAt: stored.createdAt.toISOString(),
  updatedAt: stored.updatedAt.toISOString(),
})

export const notificationOf = (row: NotificationRow): Notification => ({
  id: row.id,
  kind: row.kind,
  title: row.title,
  body: row.body,
  read: row.read,
  createdAt: row.createdAt.toISOString(),
})

/** Newest first, ties by id (as listOrders documents); ms clocks tie, ids never do. */
export const newestOrdersFirst = (a: StoredOrder, b: StoredOrder) =>
  b.createdAt.getTime() - a.createdAt.getTime() || b.id - a.id

/** The items of a numbered page of a list. */
export const pageOf = <Item>(items: Item[], page: number, limit: number) =>
  items.slice((page - 1) * limit, page * limit)

/** The figures of a numbered page (PagePagination). */
export const pageFigures = (page: number, limit: number, total: number) => ({
  page,
  limit,
  total,
  pages: Math.ceil(total / limit),
  hasNext: page * limit < total,
  hasPrev: page > 1,
})
