import { eq } from 'drizzle-orm'
import fc from 'fast-check'
import type { Database } from '../../../src/db/database.js'
import { users, webhookEndpointDeliveries } from '../../../src/db/schema.js'
import type { ApiResponse } from '../api.js'
import type { Backend } from '../backends.js'
import { ADMIN, login, newUser, startServer, type TestServer } from '../server.js'
import type { Caller, Tokens } from './callers.js'
import { ifMatchHints } from './if-match.js'
import {
  type FuzzRequest,
  type Generation,
  isPlaceholder,
  type Placeholder,
} from './rest-requests.js'
import { placeOrders, storeChat, storeFiles, storeSpares, writePosts } from './world-fixtures.js'

export interface Account {
  id: number
  name: string
  email: string
  password: string
}

/** An order placed with an Idempotency-Key: what a retry with the key must replay. */
export interface KeyedOrder {
  /** The lines as sent, `[productId, quantity]` in order: "the same body" is these. */
  lines: string
  order: unknown
}

/**
 * A server with a known cast: an admin, a user, products live and deleted, orders in
 * several statuses, and posts and files of both accounts. The server has no
 * WEBHOOK_SECRET, so it accepts no webhook, and no METRICS_TOKEN, so only an admin reads
 * its metrics. It takes any http(s) webhook target without resolving it, and sends no
 * webhook (WEBHOOK_CONCURRENCY=0): the URLs the run makes up are never called.
 */
export interface World {
  server: TestServer
  db: Database
  tokens: Tokens
  accounts: { user: Account; admin: Account }
  /** Ids of products made before the run: two live, one deleted. */
  productIds: number[]
  /**
   * A product for the run's orders, with stock for many: the catalog's operations run
   * first and, hinted to `productIds`, delete or restock those before any order.
   */
  stockedProductId: number
  /** Ids of orders placed before the run: the user's PENDING and PAID, the admin's CANCELLED. */
  orderIds: number[]
  /** Posts written before the run, `[userId, postId]`: three of the user's, two of the admin's. */
  posts: [number, number][]
  /** Files stored before the run: two of the user's, one of the admin's. */
  uploadIds: number[]
  /**
   * Accounts of no caller, each with a post, for the run to change and delete: the
   * user's and the admin's own are never deleted, nor their role changed.
   */
  spareIds: number[]
  /** Orders the run placed with an Idempotency-Key, by `keyedOrderName`. */
  keyedOrders: Map<string, KeyedOrder>
  /** A chat stored before the run, and its messages' ids: what `after` resumes. */
  chat: { chatId: string; messageIds: number[] }
  /** A webhook endpoint made before the run, and its deliveries `[endpointId, deliveryId]`. */
  webhookDeliveries: [number, number][]
}

/** Keys are the user's own: one user's key is no other's. */
export const keyedOrderName = (account: Account, key: string) => `${account.id} ${key}`

const FIXTURE_PRODUCT = { name: 'Fuzz fixture', price: 9.99, category: 'fuzz', stock: 5 }
const STOCKED_PRODUCT = { ...FIXTURE_PRODUCT, name: 'Fuzz stock', price: 0.1, stock: 1000 }

export async function createWorld(backend: Backend): Promise<World> {
  const server = await startServer(backend, {
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_CONCURRENCY: '0',
  })
  const admin = await login(server.api, ADMIN)
  const webhookEndpoint = await server.api.post('/webhook-endpoints', {
    json: { url: 'http://127.0.0.1:9/fuzz', events: ['product.created', 'order.created'] },
    token: admin.accessToken,
  })
  const user = await newUser(server.api)
  const productIds: number[] = []
  for (let made = 0; made < 3; made += 1) {
    const created = await server.api.post('/products', {
      json: FIXTURE_PRODUCT,
      token: admin.accessToken,
    })
    productIds.push(created.body.data.id)
  }
  await server.api.delete(`/products/${productIds[2]}`, { token: admin.accessToken })
  const tokens = { user: user.accessToken, admin: admin.accessToken }
  const stocked = await server.api.post('/products', {
    json: STOCKED_PRODUCT,
    token: admin.accessToken,
  })
  const stockedProductId: number = stocked.body.data.id
  const orderIds = await placeOrders(server.api, tokens, stockedProductId)
  const [adminRow] = await server.testDatabase.database.db
    .select()
    .from(users)
    .where(eq(users.email, ADMIN.email))
  if (!adminRow) throw new Error('the configured admin was not created')
  const posts = [
    ...(await writePosts(server.api, user.user.id, tokens.user, 3)),
    ...(await writePosts(server.api, adminRow.id, tokens.admin, 2)),
  ]
  const uploadIds = [
    ...(await storeFiles(server.baseUrl, tokens.user, 2)),
    ...(await storeFiles(server.baseUrl, tokens.admin, 1)),
  ]
  const spareIds = await storeSpares(server.testDatabase.database.db, SPARES)
  const messageIds = await storeChat(server.testDatabase.database.db, WORLD_CHAT, 3)
  const webhookDeliveries = await deliveriesOf(server, webhookEndpoint.body.data.id)
  return {
    server,
    db: server.testDatabase.database.db,
    tokens,
    accounts: {
      user: { id: user.user.id, name: user.user.name, email: user.email, password: user.password },
      admin: { id: adminRow.id, name: adminRow.name, ...ADMIN },
    },
    productIds,
    stockedProductId,
    orderIds,
    posts,
    uploadIds,
    spareIds,
    keyedOrders: new Map(),
    chat: { chatId: WORLD_CHAT, messageIds },
    webhookDeliveries,
  }
}

/** The deliveries of the fixtures' events to an endpoint, once the outbox has handed them on. */
async function deliveriesOf(server: TestServer, endpointId: number): Promise<[number, number][]> {
  const { db } = server.testDatabase.database
  for (let tries = 0; tries < 200; tries += 1) {
    const rows = await db
      .select({ id: webhookEndpointDeliveries.id })
      .from(webhookEndpointDeliveries)
      .where(eq(webhookEndpointDeliveries.endpointId, endpointId))
    if (rows.length >= 2) return rows.map(({ id }) => [endpointId, id])
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error('the fixtures made no webhook deliveries')
}

const SPARES = 12
const WORLD_CHAT = 'fuzz-world'

/** The email in letters of random case: emails match regardless of it. */
const anyCase = (email: string) =>
  fc
    .array(fc.boolean(), { minLength: email.length, maxLength: email.length })
    .map((upper) => [...email].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join(''))

/** What the generators need of the world: tokens, and values that hit its data. */
export function generationOf(world: World): Generation {
  const { user, admin } = world.accounts
  const credentials = fc
    .constantFrom(user, admin)
    .chain((account) =>
      fc.record({ email: anyCase(account.email), password: fc.constant(account.password) }),
    )
  const issued = fc.constantFrom<Placeholder['placeholder']>(
    'ownRefreshToken',
    'rotatedRefreshToken',
  )
  const refreshBody = issued.map((placeholder) => ({ refreshToken: { placeholder } }))
  return {
    tokens: world.tokens,
    hints: {
      // The fixtures, and ids the run's own creations take.
      parameters: {
        id: fc.oneof(
          fc.constantFrom(
            ...world.productIds,
            ...world.orderIds,
            ...world.uploadIds,
            ...world.spareIds,
            ...world.webhookDeliveries.map(([endpointId]) => endpointId),
            user.id,
            admin.id,
          ),
          fc.integer({ min: 1, max: 60 }),
        ),
        deliveryId: fc.oneof(
          fc.constantFrom(...world.webhookDeliveries.map(([, deliveryId]) => deliveryId)),
          fc.integer({ min: 1, max: 60 }),
        ),
        postId: fc.oneof(
          fc.constantFrom(...world.posts.map(([, postId]) => postId)),
          fc.integer({ min: 1, max: 60 }),
        ),
        // A few keys, so that retries with one (the same body or another) come up.
        'Idempotency-Key': fc.constantFrom('fuzz-key-1', 'fuzz-key-2'),
        'If-Match': ifMatchHints,
      },
      bodies: {
        login: credentials,
        refreshTokens: refreshBody,
        logout: refreshBody,
        // The accounts' addresses, in any case: a reset email is queued for them.
        requestPasswordReset: credentials.map(({ email }) => ({ email })),
        createOrder: orderBodies(world),
      },
      // A post under its author's path: independent ids would rarely pair up so.
      paths: {
        '/users/{id}/posts/{postId}': fc
          .constantFrom(...world.posts)
          .map(([id, postId]) => ({ id, postId })),
        '/webhook-endpoints/{id}/deliveries/{deliveryId}/retry': fc
          .constantFrom(...world.webhookDeliveries)
          .map(([id, deliveryId]) => ({ id, deliveryId })),
      },
      sendable: (request) => keepsTheCallers(world, request),
    },
  }
}

/**
 * A logout-all that went through, valid or with a flaw the service may ignore, ended
 * every session of its caller: the caller logs in again, so the rest of the run has a
 * token that works.
 */
export async function renewSessionsEndedBy(
  world: World,
  request: Pick<FuzzRequest, 'operationId' | 'caller'>,
  response: Pick<ApiResponse, 'status'>,
): Promise<void> {
  const { operationId, caller } = request
  if (operationId !== 'logoutAll' || response.status !== 204) return
  if (caller !== 'user' && caller !== 'admin') return
  const { email, password } = world.accounts[caller]
  world.tokens[caller] = (await login(world.server.api, { email, password })).accessToken
}

/** False for a deletion of the user's or admin's own account, or a change of its role. */
function keepsTheCallers(world: World, request: FuzzRequest): boolean {
  const { user, admin } = world.accounts
  const id = request.inputs.path.id
  if (id !== user.id && id !== admin.id) return true
  if (request.operationId === 'deleteUser') return false
  const body = request.inputs.body as { role?: unknown } | undefined
  return request.operationId !== 'updateUser' || body?.role === undefined
}

/**
 * Orders mostly of the stocked product, else of the fixtures or the run's own products,
 * one named twice at times, mostly of quantities the stock holds: random ids and
 * quantities would all be refused.
 */
function orderBodies(world: World): fc.Arbitrary<unknown> {
  const line = fc.record({
    productId: fc.oneof(
      { weight: 4, arbitrary: fc.constant(world.stockedProductId) },
      { weight: 1, arbitrary: fc.constantFrom(...world.productIds) },
      { weight: 1, arbitrary: fc.integer({ min: 1, max: 60 }) },
    ),
    quantity: fc.oneof(
      { weight: 4, arbitrary: fc.integer({ min: 1, max: 3 }) },
      { weight: 1, arbitrary: fc.integer({ min: 1, max: 1000 }) },
    ),
  })
  return fc.record({ items: fc.array(line, { minLength: 1, maxLength: 2 }) })
}

/** The account whose session a caller's placeholder token belongs to. */
export const accountOf = (world: World, caller: Caller): Account =>
  caller === 'admin' ? world.accounts.admin : world.accounts.user

/** Swaps placeholders in a body for refresh tokens issued now, to the caller's account. */
export async function resolvePlaceholders(
  world: World,
  caller: Caller,
  body: unknown,
): Promise<unknown> {
  if (typeof body !== 'object' || body === null) return body
  if (isPlaceholder(body)) return issueRefreshToken(world, caller, body.placeholder)
  if (Array.isArray(body)) {
    // Arrays stay arrays (an order's items): their entries would make an object of them.
    return Promise.all(body.map((each) => resolvePlaceholders(world, caller, each)))
  }
  const entries = await Promise.all(
    Object.entries(body).map(async ([key, value]) => [
      key,
      await resolvePlaceholders(world, caller, value),
    ]),
  )
  return Object.fromEntries(entries)
}

async function issueRefreshToken(
  world: World,
  caller: Caller,
  kind: Placeholder['placeholder'],
): Promise<string> {
  const { api } = world.server
  const { email, password } = accountOf(world, caller)
  const { refreshToken } = await login(api, { email, password })
  if (kind === 'ownRefreshToken') return refreshToken
  // Rotated: exchanged once already, so presenting it again is a reuse.
  const rotated = await api.post('/auth/refresh', { json: { refreshToken } })
  if (rotated.status !== 200) throw new Error(`refresh failed: ${rotated.text}`)
  return refreshToken
}
