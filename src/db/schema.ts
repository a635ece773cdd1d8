import { sql } from 'drizzle-orm'
import {
  bigint,
  boolean,
  check,
  customType,
  index,
  integer,
  jsonb,
  numeric,
  pgEnum,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core'

// Millisecond precision: exactly what an ISO 8601 string in JavaScript carries, so a
// timestamp read back compares equal to the one written.
const instant = (name: string) => timestamp(name, { withTimezone: true, precision: 3 })

export const products = pgTable(
  'products',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    name: text('name').notNull(),
    price: numeric('price', { precision: 12, scale: 2, mode: 'number' }).notNull(),
    category: text('category').notNull(),
    stock: integer('stock').notNull().default(0),
    createdAt: instant('created_at').notNull().defaultNow(),
    updatedAt: instant('updated_at').notNull().defaultNow(),
    deletedAt: instant('deleted_at'),
  },
  (table) => [
    check('products_price_positive', sql`${table.price} > 0`),
    check('products_stock_not_negative', sql`${table.stock} >= 0`),
    // The list order is (created_at desc, id desc) over live products; each filter
    // has an index that yields rows in that order or narrows them first.
    index('products_live_order_idx')
      .on(table.createdAt.desc().nullsFirst(), table.id.desc().nullsFirst())
      .where(sql`${table.deletedAt} is null`),
    index('products_live_category_order_idx')
      .on(table.category, table.createdAt.desc().nullsFirst(), table.id.desc().nullsFirst())
      .where(sql`${table.deletedAt} is null`),
    index('products_live_price_idx').on(table.price).where(sql`${table.deletedAt} is null`),
    // A category's price range, searched or not, is counted from this index alone: it
    // holds every column such a list's matches are chosen and ordered by, so a total of
    // thousands reads no table rows (drizzle has no INCLUDE; the trailing keys serve).
    index('products_live_category_price_idx')
      .on(table.category, table.price, table.createdAt, table.id, table.name)
      .where(sql`${table.deletedAt} is null`),
    // A search within a category narrows by both in one scan of one index (btree_gin for
    // the category's key); a search alone reads the same index as well as a trigram index
    // of the name alone would, since GIN's columns each serve a query on their own.
    index('products_live_category_name_trgm_idx')
      .using('gin', table.category, table.name.op('gin_trgm_ops'))
      .where(sql`${table.deletedAt} is null`),
  ],
)

// Live products per category, kept by triggers (migrations 0004 and 0010): the list's
// total without a filter, or with only a category, is a sum here instead of a count. Each
// category's count is spread over stripes (one per database session, modulo 16), so
// concurrent writes in one category do not queue on one row's lock until they commit.
export const productCounts = pgTable(
  'product_counts',
  {
    category: text('category').notNull(),
    stripe: smallint('stripe').notNull().default(0),
    live: integer('live').notNull(),
  },
  (table) => [primaryKey({ columns: [table.category, table.stripe] })],
)

export const roles = pgEnum('role', ['user', 'admin'])

export const users = pgTable(
  'users',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    name: text('name').notNull(),
    email: text('email').notNull(),
    passwordHash: text('password_hash').notNull(),
    age: integer('age'),
    phoneNumber: text('phone_number'),
    twoFactorEnabled: boolean('two_factor_enabled').notNull().default(false),
    role: roles('role').notNull().default('user'),
    createdAt: instant('created_at').notNull().defaultNow(),
    emailVerifiedAt: instant('email_verified_at'),
    // Raised whenever every session must end: access tokens carry the version they were
    // issued under, and one of an older version is refused.
    sessionVersion: integer('session_version').notNull().default(0),
    // The TOTP secret, encrypted; set at setup, in use once twoFactorEnabled is true.
    totpSecret: text('totp_secret'),
    // The last TOTP time step a login used: a code is good once per window.
    totpLastStep: bigint('totp_last_step', { mode: 'number' }),
  },
  (table) => [uniqueIndex('users_email_lower_idx').on(sql`lower(${table.email})`)],
)

// A refresh token is stored only as its SHA-256; every token of one login shares a
// family, so reuse of a rotated token can revoke the whole session at once.
export const refreshTokens = pgTable(
  'refresh_tokens',
  {
    id: uuid('id').primaryKey(),
    familyId: uuid('family_id').notNull(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    tokenHash: text('token_hash').notNull(),
    expiresAt: instant('expires_at').notNull(),
    revokedAt: instant('revoked_at'),
    createdAt: instant('created_at').notNull().defaultNow(),
  },
  (table) => [
    uniqueIndex('refresh_tokens_hash_idx').on(table.tokenHash),
    index('refresh_tokens_family_idx').on(table.familyId),
  ],
)

/** Ten single-use codes that stand in for a TOTP code, stored only as their SHA-256. */
export const recoveryCodes = pgTable(
  'recovery_codes',
  {
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    codeHash: text('code_hash').notNull(),
    usedAt: instant('used_at'),
  },
  (table) => [primaryKey({ columns: [table.userId, table.codeHash] })],
)

export const accountTokenPurposes = pgEnum('account_token_purpose', [
  'password-reset',
  'verify-email',
])

/**
 * The single-use tokens mailed to an account (a password reset, an email to verify),
 * stored only as their SHA-256, until they are used or expire.
 */
export const accountTokens = pgTable(
  'account_tokens',
  {
    tokenHash: text('token_hash').primaryKey(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    purpose: accountTokenPurposes('purpose').notNull(),
    expiresAt: instant('expires_at').notNull(),
    usedAt: instant('used_at'),
    createdAt: instant('created_at').notNull().defaultNow(),
  },
  (table) => [index('account_tokens_user_idx').on(table.userId)],
)

/**
 * The ids of deleted accounts: their row is gone (and their email free again), but the
 * id answers 410 rather than 404, as a deleted product's does. Ids are never reused.
 */
export const deletedUsers = pgTable('deleted_users', {
  id: integer('id').primaryKey(),
  deletedAt: instant('deleted_at').notNull().defaultNow(),
})

export const posts = pgTable(
  'posts',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    title: text('title').notNull(),
    body: text('body').notNull(),
    createdAt: instant('created_at').notNull().defaultNow(),
  },
  // A user's newest first: the REST list, and the newest few of many users in one batch.
  (table) => [
    index('posts_user_order_idx').on(
      table.userId,
      table.createdAt.desc().nullsFirst(),
      table.id.desc().nullsFirst(),
    ),
  ],
)

export const messages = pgTable(
  'messages',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    chatId: text('chat_id').notNull(),
    text: text('text').notNull(),
    author: text('author').notNull(),
    createdAt: instant('created_at').notNull().defaultNow(),
  },
  // A chat's newest messages, and paging back from one of them; every chat's use the key.
  (table) => [index('messages_chat_id_idx').on(table.chatId, table.id)],
)

/**
 * Events written in the transaction of the change they report (the transactional outbox):
 * a rolled-back change leaves none, and a committed one waits here until it has been
 * published, by the instance that committed it or by whichever relays next, in id order;
 * the id is the event id subscribers deduplicate on. A published event is deleted, so the
 * table holds only what is yet to go out: one index, and no retention to prune.
 */
export const outbox = pgTable('outbox', {
  id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
  topic: text('topic').notNull(),
  payload: jsonb('payload').notNull(),
  createdAt: instant('created_at').notNull().defaultNow(),
  // The W3C traceparent of the change, when traced: its subscribers' deliveries join that trace.
  traceparent: text('traceparent'),
})

export const orderStatuses = pgEnum('order_status', [
  'PENDING',
  'PAID',
  'SHIPPED',
  'DELIVERED',
  'CANCELLED',
])

export const orders = pgTable(
  'orders',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    // No foreign key: an order outlives the account that placed it, keeping its id.
    userId: integer('user_id').notNull(),
    status: orderStatuses('status').notNull().default('PENDING'),
    // Summed from the items when placed; at most what 12 digits before the point hold.
    total: numeric('total', { precision: 14, scale: 2, mode: 'number' }).notNull(),
    createdAt: instant('created_at').notNull().defaultNow(),
    updatedAt: instant('updated_at').notNull().defaultNow(),
  },
  // A user's orders newest first; every user's (an admin's list) use the key.
  (table) => [
    index('orders_user_order_idx').on(table.userId, table.createdAt.desc(), table.id.desc()),
    index('orders_order_idx').on(table.createdAt.desc(), table.id.desc()),
  ],
)

// One line per product (repeated lines are merged when placed), priced when placed.
export const orderItems = pgTable(
  'order_items',
  {
    orderId: integer('order_id')
      .notNull()
      .references(() => orders.id, { onDelete: 'cascade' }),
    productId: integer('product_id')
      .notNull()
      .references(() => products.id),
    quantity: integer('quantity').notNull(),
    unitPrice: numeric('unit_price', { precision: 12, scale: 2, mode: 'number' }).notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.orderId, table.productId] }),
    check('order_items_quantity_positive', sql`${table.quantity} > 0`),
  ],
)

/**
 * The first answer to a request with an Idempotency-Key, kept 24 hours to be replayed to
 * a retry. The row is written in the transaction of the order it answers: a retry that
 * arrives meanwhile waits on the key, then replays.
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    // Null only inside the transaction that claimed the key, until it stores its answer.
    statusCode: integer('status_code'),
    response: jsonb('response'),
    createdAt: instant('created_at').notNull().defaultNow(),
  },
  (table) => [
    primaryKey({ columns: [table.userId, table.key] }),
    index('idempotency_keys_created_at_idx').on(table.createdAt),
  ],
)

export const notifications = pgTable(
  'notifications',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    kind: text('kind').notNull(),
    title: text('title').notNull(),
    body: text('body').notNull(),
    read: boolean('read').notNull().default(false),
    createdAt: instant('created_at').notNull().defaultNow(),
  },
  // A user's newest first, and paging back by id.
  (table) => [index('notifications_user_idx').on(table.userId, table.id.desc())],
)

/**
 * Every webhook event received, by the id its signed body carries: a repeat finds its
 * row and is acknowledged without being applied again, on any instance, after any
 * restart. (The column kept its first name, from when deliveries were known by their
 * unsigned header id.)
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    source: text('source').notNull(),
    eventId: text('delivery_id').notNull(),
    eventType: text('event_type').notNull(),
    applied: boolean('applied').notNull(),
    receivedAt: instant('received_at').notNull().defaultNow(),
  },
  (table) => [primaryKey({ columns: [table.source, table.eventId] })],
)

export const webhookEventTypes = pgEnum('webhook_event_type', [
  'order.created',
  'order.updated',
  'product.created',
  'product.updated',
  'product.deleted',
])

/**
 * Where admins have the service send its events (Standard Webhooks). The signing secret
 * is sealed (secret-box.ts). `failingSince` is when the current run of failed attempts
 * began, null after a success: a run of 5 days disables the endpoint.
 */
export const webhookEndpoints = pgTable('webhook_endpoints', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  url: text('url').notNull(),
  events: webhookEventTypes('events').array().notNull(),
  description: text('description'),
  enabled: boolean('enabled').notNull().default(true),
  sealedSecret: text('sealed_secret').notNull(),
  failingSince: instant('failing_since'),
  createdAt: instant('created_at').notNull().defaultNow(),
  updatedAt: instant('updated_at').notNull().defaultNow(),
})

/**
 * An event of the outbox that at least one endpoint was to receive, kept as it was when
 * its change committed: every delivery of it sends the same body under the same id.
 */
export const webhookEvents = pgTable('webhook_events', {
  id: uuid('id').primaryKey().defaultRandom(),
  type: webhookEventTypes('type').notNull(),
  data: jsonb('data').notNull(),
  occurredAt: instant('occurred_at').notNull(),
})

export const webhookDeliveryStatuses = pgEnum('webhook_delivery_status', [
  'pending',
  'succeeded',
  'failed',
])

/**
 * One event on its way to one endpoint, and its log: the unique pair is what makes it
 * once per event and endpoint, whichever instances see the event. Instances claim due
 * deliveries (FOR UPDATE SKIP LOCKED) for a lease; one whose instance died mid-attempt
 * is due again when its lease ends. `attemptsAllowed` is 1 + the retry schedule's
 * length, and one more for each manual retry.
 */
export const webhookEndpointDeliveries = pgTable(
  'webhook_endpoint_deliveries',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    endpointId: integer('endpoint_id')
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    eventId: uuid('event_id')
      .notNull()
      .references(() => webhookEvents.id, { onDelete: 'cascade' }),
    status: webhookDeliveryStatuses('status').notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    attemptsAllowed: integer('attempts_allowed').notNull(),
    lastStatusCode: integer('last_status_code'),
    lastError: text('last_error'),
    nextAttemptAt: instant('next_attempt_at').notNull().defaultNow(),
    leaseEndsAt: instant('lease_ends_at'),
    createdAt: instant('created_at').notNull().defaultNow(),
  },
  (table) => [
    uniqueIndex('webhook_endpoint_deliveries_event_endpoint_idx').on(
      table.eventId,
      table.endpointId,
    ),
    index('webhook_endpoint_deliveries_endpoint_idx').on(table.endpointId, table.id.desc()),
    index('webhook_endpoint_deliveries_due_idx')
      .on(table.nextAttemptAt)
      .where(sql`${table.status} = 'pending'`),
  ],
)

export const emailStatuses = pgEnum('email_status', ['queued', 'sending', 'sent', 'failed'])

// An outbox of emails: the worker claims the due ones (FOR UPDATE SKIP LOCKED) for a lease,
// so instances share it without sending one twice.
export const emails = pgTable(
  'emails',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    recipient: text('recipient').notNull(),
    subject: text('subject').notNull(),
    text: text('text').notNull(),
    status: emailStatuses('status').notNull().default('queued'),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    nextAttemptAt: instant('next_attempt_at').notNull().defaultNow(),
    // While `sending`: past this, the claiming instance is presumed dead and it is due again.
    leaseEndsAt: instant('lease_ends_at'),
    createdAt: instant('created_at').notNull().defaultNow(),
    sentAt: instant('sent_at'),
  },
  (table) => [
    index('emails_due_idx')
      .on(table.nextAttemptAt)
      .where(sql`${table.status} in ('queued', 'sending')`),
  ],
)

const bytea = customType<{ data: Buffer; driverData: Buffer | Uint8Array }>({
  dataType: () => 'bytea',
  // PGlite answers a Uint8Array; postgres.js a Buffer.
  fromDriver: (value) => (Buffer.isBuffer(value) ? value : Buffer.from(value)),
})

export const uploadStatuses = pgEnum('upload_status', ['pending', 'complete', 'deleted'])

// A file is stored in fixed-size chunks, written as it streams in: `pending` until the
// last one is, when its digest is known. Readers see complete uploads only. `size` is the
// bytes stored so far, each of them reserved in upload_usage before it was. A deleted
// upload keeps its row without its chunks, so that its id answers 410, not 404.
export const uploads = pgTable(
  'uploads',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    ownerId: integer('owner_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    mediaType: text('media_type').notNull(),
    status: uploadStatuses('status').notNull().default('pending'),
    size: bigint('size', { mode: 'number' }).notNull().default(0),
    sha256: text('sha256'),
    createdAt: instant('created_at').notNull().defaultNow(),
  },
  (table) => [
    index('uploads_pending_idx').on(table.createdAt).where(sql`${table.status} = 'pending'`),
    index('uploads_owner_complete_idx')
      .on(table.ownerId, table.id)
      .where(sql`${table.status} = 'complete'`),
  ],
)

// The bytes of each account's uploads, pending ones included: the one row concurrent
// uploads of an account reserve from, so that the check and the reservation are atomic.
export const uploadUsage = pgTable(
  'upload_usage',
  {
    userId: integer('user_id')
      .primaryKey()
      .references(() => users.id, { onDelete: 'cascade' }),
    usedBytes: bigint('used_bytes', { mode: 'number' }).notNull().default(0),
  },
  (table) => [check('upload_usage_not_negative', sql`${table.usedBytes} >= 0`)],
)

export const uploadChunks = pgTable(
  'upload_chunks',
  {
    uploadId: integer('upload_id')
      .notNull()
      .references(() => uploads.id, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    bytes: bytea('bytes').notNull(),
  },
  (table) => [primaryKey({ columns: [table.uploadId, table.seq] })],
)

export type ProductRow = typeof products.$inferSelect
export type UserRow = typeof users.$inferSelect
export type EmailRow = typeof emails.$inferSelect
export type UploadRow = typeof uploads.$inferSelect
export type RefreshTokenRow = typeof refreshTokens.$inferSelect
export type PostRow = typeof posts.$inferSelect
export type OutboxRow = typeof outbox.$inferSelect
export type OrderRow = typeof orders.$inferSelect
export type OrderItemRow = typeof orderItems.$inferSelect
export type NotificationRow = typeof notifications.$inferSelect
export type WebhookEndpointRow = typeof webhookEndpoints.$inferSelect
export type WebhookDeliveryRow = typeof webhookEndpointDeliveries.$inferSelect
