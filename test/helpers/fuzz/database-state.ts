import { asc, type SQL, sql } from 'drizzle-orm'
import type { Database } from '../../../src/db/database.js'
import {
  type NotificationRow,
  notifications,
  type OrderItemRow,
  type OrderRow,
  orderItems,
  orders,
  type PostRow,
  type ProductRow,
  posts,
  products,
  type UploadRow,
  type UserRow,
  uploads,
  users,
} from '../../../src/db/schema.js'
import { rowsOf } from '../../../src/db/statement-rows.js'

/** Rows of a raw statement, whichever driver ran it. */
export async function rowsOfStatement<Row>(db: Database, statement: SQL): Promise<Row[]> {
  return rowsOf<Row>(await db.execute(statement))
}

/**
 * One digest of everything a request may store: products, users and their posts,
 * messages, orders and their items, notifications, Idempotency-Keys, webhook deliveries,
 * uploads with their chunks and each account's usage, the refresh tokens issued, the
 * recovery codes, the account tokens (reset, verification), the emails queued, and the
 * webhook endpoints. A refused request must leave it as it was. A token's revocation is
 * left out: presenting a retired token is refused and, as documented, revokes its
 * session. So are webhook deliveries: the outbox hands earlier requests' events on to
 * them in the background, while later requests are judged.
 */
export async function storedState(db: Database): Promise<string> {
  const [row] = await rowsOfStatement<{ digest: string }>(
    db,
    sql`select concat_ws('|',
      (select md5(coalesce(string_agg(p::text, ',' order by p.id), '')) from products p),
      (select md5(coalesce(string_agg(u::text, ',' order by u.id), '')) from users u),
      (select md5(coalesce(string_agg(p::text, ',' order by p.id), '')) from posts p),
      (select md5(coalesce(string_agg(m::text, ',' order by m.id), '')) from messages m),
      (select md5(coalesce(string_agg(o::text, ',' order by o.id), '')) from orders o),
      (select md5(coalesce(string_agg(i::text, ',' order by i.order_id, i.product_id), ''))
        from order_items i),
      (select md5(coalesce(string_agg(n::text, ',' order by n.id), '')) from notifications n),
      (select md5(coalesce(string_agg(k::text, ',' order by k.user_id, k.key), ''))
        from idempotency_keys k),
      (select md5(coalesce(string_agg(w::text, ',' order by w.source, w.delivery_id), ''))
        from webhook_deliveries w),
      (select md5(coalesce(string_agg(f::text, ',' order by f.id), '')) from uploads f),
      (select count(*) from upload_chunks),
      (select md5(coalesce(string_agg(s::text, ',' order by s.user_id), '')) from upload_usage s),
      (select count(*) from refresh_tokens),
      (select md5(coalesce(string_agg(r::text, ',' order by r.user_id, r.code_hash), ''))
        from recovery_codes r),
      (select md5(coalesce(string_agg(t::text, ',' order by t.token_hash), ''))
        from account_tokens t),
      (select count(*) from emails),
      (select md5(coalesce(string_agg(w::text, ',' order by w.id), '')) from webhook_endpoints w)
    ) as digest`,
  )
  return row?.digest ?? ''
}

export type StoredOrder = OrderRow & { items: OrderItemRow[] }

/** The rows the rules of orders, notifications, users, posts and uploads are judged against, by id. */
export interface StoredRows {
  products: Map<number, ProductRow>
  orders: Map<number, StoredOrder>
  notifications: Map<number, NotificationRow>
  users: Map<number, UserRow>
  posts: Map<number, PostRow>
  uploads: Map<number, UploadRow>
}

const byId = <Row extends { id: number }>(rows: Row[]) => new Map(rows.map((row) => [row.id, row]))

/** What is stored now: taken before a request, it says what the request must do. */
export async function storedRows(db: Database): Promise<StoredRows> {
  const productRows = await db.select().from(products)
  const orderRows = await db.select().from(orders)
  const itemRows = await db.select().from(orderItems).orderBy(asc(orderItems.productId))
  const notificationRows = await db.select().from(notifications)
  const userRows = await db.select().from(users)
  const postRows = await db.select().from(posts)
  const uploadRows = await db.select().from(uploads)
  const itemsOf = (orderId: number) => itemRows.filter((item) => item.orderId === orderId)
  return {
    products: byId(productRows),
    orders: byId(orderRows.map((order) => ({ ...order, items: itemsOf(order.id) }))),
    notifications: byId(notificationRows),
    users: byId(userRows),
    posts: byId(postRows),
    uploads: byId(uploadRows),
  }
}
