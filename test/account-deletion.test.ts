import { and, eq, isNull, type SQL } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  accountTokens,
  deletedUsers,
  notifications,
  orders,
  posts,
  recoveryCodes,
  refreshTokens,
  uploadChunks,
  uploads,
  uploadUsage,
  users,
} from '../src/db/schema.js'
import type { ApiResponse } from './helpers/api.js'
import { backends } from './helpers/backends.js'
import { ADMIN, login, startServer, type TestServer } from './helpers/server.js'

/**
 * DELETE /users/{id} (DESIGN.md §11): what a deletion takes with it and what it leaves,
 * the 410 its id answers from then on, and who may delete whom.
 */

const PASSWORD = 'deleted-password-1'
const BOUNDARY = 'deletion-boundary'
const FILE = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="mine.txt"\r\nContent-Type: text/plain\r\n\r\nbytes of an account about to go\r\n--${BOUNDARY}--\r\n`
const UNKNOWN_ID = 2_000_000_000

const expectError = (response: ApiResponse, status: number, code: string) => {
  expect(response.status, response.text).toBe(status)
  expect(response.body.error.code).toBe(code)
}

describe.each(backends)('deleting an account on $name', (backend) => {
  let server: TestServer
  let admin: string
  let productId: number
  let made = 0
  const api = () => server.api
  const db = () => server.testDatabase.database.db

  /** A signed-up, logged-in account with a post, a file, an order and what hangs on it. */
  async function account() {
    made += 1
    const email = `deleted-${made}-${Date.now()}@example.com`
    const created = await api().post('/users', {
      json: { name: `Deleted ${made}`, email, password: PASSWORD },
    })
    expect(created.status, created.text).toBe(201)
    const id: number = created.body.data.id
    const tokens = await login(api(), { email, password: PASSWORD })
    const token = tokens.accessToken
    const post = await api().post(`/users/${id}/posts`, { json: { title: 'Mine' }, token })
    const file = await api().post('/upload', {
      raw: FILE,
      token,
      headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    })
    const order = await api().post('/orders', {
      json: { items: [{ productId, quantity: 1 }] },
      token,
    })
    expect([post.status, file.status, order.status]).toEqual([201, 201, 201])
    await db().insert(notifications).values({ userId: id, kind: 'test', title: 'Yours', body: '' })
    await db()
      .insert(recoveryCodes)
      .values({ userId: id, codeHash: `code-of-${id}` })
    // Its email's verification token came with the sign-up.
    return {
      id,
      email,
      ...tokens,
      postId: post.body.data.id as number,
      uploadId: file.body.data.id as number,
      orderId: order.body.data.id as number,
    }
  }
  type Account = Awaited<ReturnType<typeof account>>

  /** What is stored of an account, by table: all of it goes but its orders. */
  async function heldBy({ id, uploadId }: Account) {
    const count = (table: Parameters<ReturnType<typeof db>['$count']>[0], where: SQL) =>
      db().$count(table, where)
    return {
      users: await count(users, eq(users.id, id)),
      posts: await count(posts, eq(posts.userId, id)),
      uploads: await count(uploads, eq(uploads.ownerId, id)),
      chunks: await count(uploadChunks, eq(uploadChunks.uploadId, uploadId)),
      usage: await count(uploadUsage, eq(uploadUsage.userId, id)),
      notifications: await count(notifications, eq(notifications.userId, id)),
      refreshTokens: await count(refreshTokens, eq(refreshTokens.userId, id)),
      recoveryCodes: await count(recoveryCodes, eq(recoveryCodes.userId, id)),
      accountTokens: await count(accountTokens, eq(accountTokens.userId, id)),
      orders: await count(orders, eq(orders.userId, id)),
      deleted: await count(deletedUsers, eq(deletedUsers.id, id)),
    }
  }
  const everything = {
    users: 1,
    posts: 1,
    uploads: 1,
    chunks: 1,
    usage: 1,
    notifications: 1,
    refreshTokens: 1,
    recoveryCodes: 1,
    accountTokens: 1,
    orders: 1,
    deleted: 0,
  }

  beforeAll(async () => {
    server = await startServer(backend)
    admin = (await login(server.api, ADMIN)).accessToken
    const product = await server.api.post('/products', {
      json: { name: 'Outlives its buyer', price: 3, category: 'deletion', stock: 100 },
      token: admin,
    })
    productId = product.body.data.id
  })
  afterAll(() => server?.close())

  describe('by the user themself', () => {
    let gone: Account
    let deleted: ApiResponse
    beforeAll(async () => {
      gone = await account()
      expect(await heldBy(gone)).toEqual(everything)
      deleted = await api().delete(`/users/${gone.id}`, { token: gone.accessToken })
    })

    it('answers 204 and takes everything of the account but its orders', async () => {
      expect(deleted.status, deleted.text).toBe(204)
      expect(await heldBy(gone)).toEqual({
        ...Object.fromEntries(Object.keys(everything).map((table) => [table, 0])),
        orders: 1,
        deleted: 1,
      })
      const order = await api().get(`/orders/${gone.orderId}`, { token: admin })
      expect(order.status).toBe(200)
      expect(order.body.data.userId).toBe(gone.id)
    })

    it('answers 410 GONE on every path of its id, to anyone', async () => {
      const paths = [`/users/${gone.id}`, `/users/${gone.id}/posts`]
      for (const path of paths) expectError(await api().get(path), 410, 'GONE')
      expectError(await api().get(`/users/${gone.id}/posts/${gone.postId}`), 410, 'GONE')
      const byAdmin = { token: admin }
      expectError(
        await api().post(`/users/${gone.id}/posts`, { json: { title: 'Late' }, ...byAdmin }),
        410,
        'GONE',
      )
      expectError(
        await api().delete(`/users/${gone.id}/posts/${gone.postId}`, byAdmin),
        410,
        'GONE',
      )
      expectError(
        await api().patch(`/users/${gone.id}`, { json: { name: 'Back' }, ...byAdmin }),
        410,
        'GONE',
      )
      expectError(await api().delete(`/users/${gone.id}`, byAdmin), 410, 'GONE')
    })

    it('keeps 404 for an id never used', async () => {
      expectError(await api().get(`/users/${UNKNOWN_ID}`), 404, 'NOT_FOUND')
      expectError(await api().get(`/users/${UNKNOWN_ID}/posts`), 404, 'NOT_FOUND')
      expectError(await api().delete(`/users/${UNKNOWN_ID}`, { token: admin }), 404, 'NOT_FOUND')
    })

    it('leaves none of its files readable', async () => {
      expectError(await api().get(`/uploads/${gone.uploadId}`, { token: admin }), 404, 'NOT_FOUND')
    })

    it('refuses its tokens and its password', async () => {
      const refreshed = await api().post('/auth/refresh', {
        json: { refreshToken: gone.refreshToken },
      })
      expectError(refreshed, 401, 'UNAUTHENTICATED')
      const loggedIn = await api().post('/auth/login', {
        json: { email: gone.email, password: PASSWORD },
      })
      expectError(loggedIn, 401, 'UNAUTHENTICATED')
      // An instance believes an account it has seen for 2 s (live-accounts.ts), §13's 3 s.
      await expect
        .poll(async () => (await api().get('/orders', { token: gone.accessToken })).status, {
          timeout: 3000,
          interval: 100,
        })
        .toBe(401)
    })

    it('frees its email for a new account, with a new id', async () => {
      const again = await api().post('/users', {
        json: { name: 'Back again', email: gone.email.toUpperCase(), password: PASSWORD },
      })
      expect(again.status, again.text).toBe(201)
      expect(again.body.data.id).not.toBe(gone.id)
      expect((await api().get(`/users/${again.body.data.id}`)).status).toBe(200)
      expectError(await api().get(`/users/${gone.id}`), 410, 'GONE')
    })
  })

  it("deletes another user's account by an admin's hand", async () => {
    const other = await account()
    const deleted = await api().delete(`/users/${other.id}`, { token: admin })
    expect(deleted.status, deleted.text).toBe(204)
    expect(await heldBy(other)).toMatchObject({ users: 0, posts: 0, orders: 1, deleted: 1 })
  })

  it('is one transaction: a deletion that fails part-way leaves the account whole, sessions too', async () => {
    const kept = await account()
    // Its id already kept as deleted, without its row: the deletion fails on the insert.
    await db().insert(deletedUsers).values({ id: kept.id })
    const failed = await api().delete(`/users/${kept.id}`, { token: kept.accessToken })
    expectError(failed, 500, 'INTERNAL')
    await db().delete(deletedUsers).where(eq(deletedUsers.id, kept.id))
    expect(await heldBy(kept)).toEqual(everything)
    const live = await db().$count(
      refreshTokens,
      and(eq(refreshTokens.userId, kept.id), isNull(refreshTokens.revokedAt)),
    )
    expect(live, 'the sessions ended by a deletion that did not happen').toBeGreaterThan(0)
    const refreshed = await api().post('/auth/refresh', {
      json: { refreshToken: kept.refreshToken },
    })
    expect(refreshed.status, refreshed.text).toBe(200)
  })

  describe('refuses, in the envelope, and deletes nothing', () => {
    it("another user's account: 403", async () => {
      const [mine, theirs] = [await account(), await account()]
      expectError(
        await api().delete(`/users/${theirs.id}`, { token: mine.accessToken }),
        403,
        'FORBIDDEN',
      )
      expect(await heldBy(theirs)).toEqual(everything)
    })

    it('no token: 401; an id that is not a number: 400', async () => {
      const kept = await account()
      expectError(await api().delete(`/users/${kept.id}`), 401, 'UNAUTHENTICATED')
      expectError(await api().delete('/users/abc', { token: admin }), 400, 'VALIDATION_ERROR')
      expect(await heldBy(kept)).toEqual(everything)
    })

    it('the last admin: 409 CONFLICT', async () => {
      const [row] = await db().select().from(users).where(eq(users.email, ADMIN.email))
      const before = await db().select().from(users)
      expectError(await api().delete(`/users/${row?.id}`, { token: admin }), 409, 'CONFLICT')
      expect(await db().select().from(users)).toEqual(before)
    })
  })
})
