import { asc, inArray, type SQL, sql } from 'drizzle-orm'
import type { Executor } from '../../db/database.js'
import { products } from '../../db/schema.js'
import { conflict, unprocessable } from '../../platform/errors.js'
import type { ReadCache } from '../../platform/infrastructure/read-cache.js'
import { productReferences } from './products-cache.js'

/** A quantity of one product, taken from stock by an order or given back. */
export interface StockLine {
  productId: number
  quantity: number
}

export interface PricedLine extends StockLine {
  /** The product's price at the moment its stock was taken. */
  unitPrice: number
}

/**
 * The catalog's stock, as other domains change it inside their own transactions. The
 * rows are locked in id order, whoever locks them, so transactions that take or give
 * back several products wait for each other instead of deadlocking.
 */
export function createInventory(cache: Pick<ReadCache, 'invalidate'>) {
  /** Locks the lines' products for the rest of the transaction; one row per id found. */
  const lockProducts = (executor: Executor, lines: readonly StockLine[]) =>
    executor
      .select({
        id: products.id,
        price: products.price,
        stock: products.stock,
        deletedAt: products.deletedAt,
      })
      .from(products)
      .where(inArray(products.id, idsOf(lines)))
      .orderBy(asc(products.id))
      .for('update')

  /** Adds `sign` × each line's quantity to its product's stock (rows already locked). */
  const moveStock = (executor: Executor, lines: readonly StockLine[], sign: SQL) =>
    executor
      .update(products)
      .set({
        stock: sql`${products.stock} + ${sign} * (case ${products.id} ${sql.join(
          lines.map(({ productId, quantity }) => sql`when ${productId} then ${quantity}::int`),
          sql` `,
        )} end)`,
        updatedAt: sql`now()`,
      })
      .where(inArray(products.id, idsOf(lines)))

  return {
    /**
     * Takes every line's quantity from stock in the caller's transaction and prices it,
     * or takes nothing: a product unknown or deleted is UNPROCESSABLE, one short of
     * stock a CONFLICT. One line per product.
     */
    async reserve(executor: Executor, lines: readonly StockLine[]): Promise<PricedLine[]> {
      const live = new Map(
        (await lockProducts(executor, lines))
          .filter((row) => !row.deletedAt)
          .map((row) => [row.id, row]),
      )
      const matched = lines.map((line) => ({ ...line, product: live.get(line.productId) }))
      const missing = matched.filter(({ product }) => !product)
      if (missing.length > 0) {
        throw unprocessable(`No product ${listed(missing)} can be ordered: unknown or deleted`)
      }
      const short = matched.filter(({ product, quantity }) => product && product.stock < quantity)
      if (short.length > 0) {
        throw conflict(`Not enough stock of product ${listed(short)}; nothing was reserved`)
      }
      await moveStock(executor, lines, sql`-1`)
      return matched.flatMap(({ product, ...line }) =>
        product ? [{ ...line, unitPrice: product.price }] : [],
      )
    },

    /** Gives the lines' quantities back to stock in the caller's transaction. */
    async restore(executor: Executor, lines: readonly StockLine[]): Promise<void> {
      if (lines.length === 0) return
      await lockProducts(executor, lines)
      await moveStock(executor, lines, sql`1`)
    },

    /** After the transaction that moved their stock committed: no cache serves the old. */
    changed: (lines: readonly StockLine[]) => cache.invalidate(productReferences(idsOf(lines))),
  }
}

export type Inventory = ReturnType<typeof createInventory>

const idsOf = (lines: readonly StockLine[]) =>
  [...new Set(lines.map((line) => line.productId))].sort((a, b) => a - b)

const listed = (lines: readonly StockLine[]) => idsOf(lines).join(', ')
