import { sql } from 'drizzle-orm'
import type { Database } from '../../db/database.js'
import { orders, products } from '../../db/schema.js'
import { rowsOf } from '../../db/statement-rows.js'

export interface CategoryFigures {
  category: string
  products: number
  minPrice: number
  avgPrice: number
  maxPrice: number
  totalStock: number
  stockValue: number
}

/** Orders of a day (YYYY-MM-DD, UTC), of a status, or of both; null where not grouped. */
export interface OrderFigures {
  day: string | null
  status: string | null
  orders: number
  total: number
}

/**
 * The figures of the reports, aggregated by the database: one statement per report
 * part, whose rows are the aggregates (a category, a status, a day and status), never
 * the products or orders themselves.
 */
export function createReportsRepository(db: Database) {
  return {
    async catalogFigures(): Promise<CategoryFigures[]> {
      const result = await db.execute(sql`
        select category,
               count(*)::int as "products",
               min(price)::float8 as "minPrice",
               round(avg(price), 2)::float8 as "avgPrice",
               max(price)::float8 as "maxPrice",
               sum(stock)::int8::text as "totalStock",
               sum(price * stock)::float8 as "stockValue"
          from ${products}
         where deleted_at is null
         group by category
         order by category`)
      return rowsOf<Record<keyof CategoryFigures, unknown>>(result).map((row) => ({
        category: String(row.category),
        products: Number(row.products),
        minPrice: Number(row.minPrice),
        avgPrice: Number(row.avgPrice),
        maxPrice: Number(row.maxPrice),
        totalStock: Number(row.totalStock),
        stockValue: Number(row.stockValue),
      }))
    },

    /**
     * Orders per day (UTC) and status, per day and per status, in one statement
     * (grouping sets): `day` or `status` is null in the rows of the coarser groupings.
     * Oldest day first.
     */
    async orderFigures(): Promise<OrderFigures[]> {
      const day = sql`to_char(${orders.createdAt} at time zone 'UTC', 'YYYY-MM-DD')`
      const result = await db.execute(sql`
        select ${day} as "day",
               ${orders.status}::text as "status",
               count(*)::int as "orders",
               sum(${orders.total})::float8 as "total"
          from ${orders}
         group by grouping sets ((${day}, ${orders.status}), (${day}), (${orders.status}))
         order by 1 nulls first, 2 nulls first`)
      return rowsOf<Record<keyof OrderFigures, unknown>>(result).map((row) => ({
        day: row.day === null ? null : String(row.day),
        status: row.status === null ? null : String(row.status),
        orders: Number(row.orders),
        total: Number(row.total),
      }))
    },
  }
}

export type ReportsRepository = ReturnType<typeof createReportsRepository>
