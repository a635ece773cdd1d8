import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'

interface Notification {
  id: number
  kind: string
  title: string
  body: string
  read: boolean
  createdAt: string
}

describe.each(backends)('REST notifications on $name', (backend) => {
  let server: TestServer
  let admin: string
  let productId: number
  const api = () => server.api

  /** A PENDING order of one item, placed by the holder of `token`. */
  const placeOrder = async (token: string) => {
    const response = await api().post('/orders', {
      json: { items: [{ productId, quantity: 1 }] },
      token,
    })
    expect(response.status, response.text).toBe(201)
    return response.body.data as { id: number; userId: number; createdAt: string }
  }
  const setStatus = async (id: number, status: string) => {
    const response = await api().patch(`/orders/${id}`, { json: { status }, token: admin })
    expect(response.status, response.text).toBe(200)
    expect(response.body.data.status).toBe(status)
  }
  const cancel = async (id: number, token: string) => {
    const response = await api().post(`/orders/${id}/cancel`, { token })
    expect(response.status, response.text).toBe(200)
    expect(response.body.data.status).toBe('CANCELLED')
  }
  /** One page of the caller's notifications, which must answer 200. */
  const page = async (token: string, query = '') => {
    const response = await api().get(`/notifications${query}`, { token })
    expect(response.status, response.text).toBe(200)
    return response.body as {
      data: Notification[]
      pagination: {
        page: number
        limit: number
        total: number
        pages: number
        hasNext: boolean
        hasPrev: boolean
      }
    }
  }
  /** Every notification of the caller, newest first (each test's users have fewer than 100). */
  const all = async (token: string, query = '') => {
    const listed = await page(token, `?limit=100${query}`)
    expect(listed.pagination.total).toBe(listed.data.length)
    return listed.data
  }
  const markRead = (id: number | string, token?: string) =>
    api().post(`/notifications/${id}/read`, { token })

  /** A fresh user with `count` notifications, made by walking orders along their statuses. */
  async function userWithNotifications(count: number) {
    const user = await newUser(server.api)
    const walk = ['PAID', 'SHIPPED', 'DELIVERED']
    let made = 0
    while (made < count) {
      const order = await placeOrder(user.accessToken)
      for (const status of walk.slice(0, Math.min(walk.length, count - made))) {
        await setStatus(order.id, status)
        made += 1
      }
    }
    return user
  }

  beforeAll(async () => {
    server = await startServer(backend)
    admin = (await login(server.api, ADMIN)).accessToken
    const product = await api().post('/products', {
      json: { name: 'Notified lamp', price: 12.5, category: 'notifications', stock: 100_000 },
      token: admin,
    })
    expect(product.status, product.text).toBe(201)
    productId = product.body.data.id
  })
  afterAll(() => server?.close())

  describe('what a status change makes', () => {
    it('a placed order notifies nobody; a PATCH to PAID makes one notification for its owner', async () => {
      const owner = await newUser(server.api)
      const order = await placeOrder(owner.accessToken)
      expect(await all(owner.accessToken)).toEqual([])

      await setStatus(order.id, 'PAID')

      const [notice, ...rest] = await all(owner.accessToken)
      expect(rest).toEqual([])
      expect(notice).toEqual({
        id: expect.any(Number),
        kind: 'order.paid',
        title: `Order #${order.id} is paid`,
        body: expect.stringContaining(`#${order.id}`),
        read: false,
        createdAt: expect.any(String),
      })
      const createdAt = notice?.createdAt as string
      expect(new Date(createdAt).toISOString()).toBe(createdAt)
      // Made by the change, after the order was placed (both by the database's clock).
      expect(Date.parse(createdAt)).toBeGreaterThanOrEqual(Date.parse(order.createdAt))
    })

    it("the owner's cancel makes one order.cancelled notification", async () => {
      const owner = await newUser(server.api)
      const order = await placeOrder(owner.accessToken)
      await cancel(order.id, owner.accessToken)
      expect(await all(owner.accessToken)).toEqual([
        expect.objectContaining({
          kind: 'order.cancelled',
          title: `Order #${order.id} was cancelled`,
          body: expect.stringContaining(`#${order.id}`),
          read: false,
        }),
      ])
    })

    it("an admin's changes notify the owner, never the admin who made them", async () => {
      const owner = await newUser(server.api)
      const adminsBefore = (await page(admin, '?limit=1')).pagination.total
      const order = await placeOrder(owner.accessToken)
      await setStatus(order.id, 'PAID')
      await cancel(order.id, admin)
      expect((await all(owner.accessToken)).map(({ kind, title }) => ({ kind, title }))).toEqual([
        { kind: 'order.cancelled', title: `Order #${order.id} was cancelled` },
        { kind: 'order.paid', title: `Order #${order.id} is paid` },
      ])
      expect((await page(admin, '?limit=1')).pagination.total).toBe(adminsBefore)
    })

    it('lists every change of an order newest first: delivered, shipped, paid', async () => {
      const owner = await newUser(server.api)
      const order = await placeOrder(owner.accessToken)
      for (const status of ['PAID', 'SHIPPED', 'DELIVERED']) await setStatus(order.id, status)
      const listed = await all(owner.accessToken)
      expect(listed.map(({ kind }) => kind)).toEqual([
        'order.delivered',
        'order.shipped',
        'order.paid',
      ])
      expect(listed.map(({ title }) => title)).toEqual([
        `Order #${order.id} was delivered`,
        `Order #${order.id} has shipped`,
        `Order #${order.id} is paid`,
      ])
      const ids = listed.map(({ id }) => id)
      expect(ids).toEqual([...ids].sort((a, b) => b - a))
      expect(new Set(ids).size).toBe(ids.length)
      const times = listed.map(({ createdAt }) => Date.parse(createdAt))
      expect(times).toEqual([...times].sort((a, b) => b - a))
    })

    it('a refused change (409) notifies nobody', async () => {
      const owner = await newUser(server.api)
      const order = await placeOrder(owner.accessToken)
      const skipped = await api().patch(`/orders/${order.id}`, {
        json: { status: 'DELIVERED' },
        token: admin,
      })
      expect(skipped.status).toBe(409)
      const same = await api().patch(`/orders/${order.id}`, {
        json: { status: 'PENDING' },
        token: admin,
      })
      expect(same.status).toBe(409)
      expect(await all(owner.accessToken)).toEqual([])

      await setStatus(order.id, 'PAID')
      await setStatus(order.id, 'SHIPPED')
      const late = await api().post(`/orders/${order.id}/cancel`, { token: owner.accessToken })
      expect(late.status).toBe(409)
      expect((await all(owner.accessToken)).map(({ kind }) => kind)).toEqual([
        'order.shipped',
        'order.paid',
      ])
    })
  })

  describe('listing', () => {
    it('pages newest first with page and limit, and figures that add up', async () => {
      const user = await userWithNotifications(5)
      const everything = await all(user.accessToken)
      expect(everything).toHaveLength(5)

      const first = await page(user.accessToken, '?limit=2')
      expect(first.pagination).toEqual({
        page: 1,
        limit: 2,
        total: 5,
        pages: 3,
        hasNext: true,
        hasPrev: false,
      })
      const second = await page(user.accessToken, '?page=2&limit=2')
      expect(second.pagination).toEqual({
        page: 2,
        limit: 2,
        total: 5,
        pages: 3,
        hasNext: true,
        hasPrev: true,
      })
      const last = await page(user.accessToken, '?page=3&limit=2')
      expect(last.pagination).toEqual({
        page: 3,
        limit: 2,
        total: 5,
        pages: 3,
        hasNext: false,
        hasPrev: true,
      })
      expect([...first.data, ...second.data, ...last.data]).toEqual(everything)
      expect(first.data).toHaveLength(2)
      expect(last.data).toHaveLength(1)

      // A page that ends exactly at the last item has nothing after it.
      const exact = await page(user.accessToken, '?limit=5')
      expect(exact.data).toEqual(everything)
      expect(exact.pagination).toEqual({
        page: 1,
        limit: 5,
        total: 5,
        pages: 1,
        hasNext: false,
        hasPrev: false,
      })

      const past = await page(user.accessToken, '?page=4&limit=2')
      expect(past.data).toEqual([])
      expect(past.pagination).toEqual({
        page: 4,
        limit: 2,
        total: 5,
        pages: 3,
        hasNext: false,
        hasPrev: true,
      })
    })

    it('defaults to page 1 of 10', async () => {
      const user = await userWithNotifications(11)
      const listed = await page(user.accessToken)
      expect(listed.data).toHaveLength(10)
      expect(listed.pagination).toEqual({
        page: 1,
        limit: 10,
        total: 11,
        pages: 2,
        hasNext: true,
        hasPrev: false,
      })
      expect(listed.data).toEqual((await all(user.accessToken)).slice(0, 10))
    })

    it('keeps only the unread ones with unread=true, newest first, with their own figures', async () => {
      const user = await userWithNotifications(4)
      const everything = await all(user.accessToken)
      const [newest, second, third, oldest] = everything as [
        Notification,
        Notification,
        Notification,
        Notification,
      ]
      for (const notice of [second, oldest]) {
        expect((await markRead(notice.id, user.accessToken)).status).toBe(200)
      }

      const unread = await page(user.accessToken, '?unread=true')
      expect(unread.data).toEqual([newest, third])
      expect(unread.pagination).toMatchObject({ total: 2, pages: 1, hasNext: false })
      const secondUnread = await page(user.accessToken, '?unread=true&limit=1&page=2')
      expect(secondUnread.data).toEqual([third])
      expect(secondUnread.pagination).toMatchObject({
        total: 2,
        pages: 2,
        hasNext: false,
        hasPrev: true,
      })

      const withRead = await page(user.accessToken, '?unread=false')
      expect(withRead.pagination.total).toBe(4)
      expect(withRead.data.map(({ id, read }) => ({ id, read }))).toEqual([
        { id: newest.id, read: false },
        { id: second.id, read: true },
        { id: third.id, read: false },
        { id: oldest.id, read: true },
      ])
    })

    it('holds nothing about the orders of other users', async () => {
      const mine = await newUser(server.api)
      const theirs = await newUser(server.api)
      const myOrder = await placeOrder(mine.accessToken)
      const theirOrders = [
        await placeOrder(theirs.accessToken),
        await placeOrder(theirs.accessToken),
      ]
      await setStatus(myOrder.id, 'PAID')
      for (const order of theirOrders) await setStatus(order.id, 'PAID')
      await cancel(theirOrders[0]?.id as number, theirs.accessToken)
      await cancel(theirOrders[1]?.id as number, admin)

      const listed = await all(mine.accessToken)
      expect(listed.map(({ title }) => title)).toEqual([`Order #${myOrder.id} is paid`])
      const text = JSON.stringify(listed)
      for (const order of theirOrders) expect(text).not.toMatch(new RegExp(`#${order.id}\\b`))
      expect(await all(mine.accessToken, '&unread=true')).toEqual(listed)

      const theirList = await all(theirs.accessToken)
      expect(theirList).toHaveLength(4)
      expect(JSON.stringify(theirList)).not.toMatch(new RegExp(`#${myOrder.id}\\b`))
      const myIds = new Set(listed.map(({ id }) => id))
      expect(theirList.filter(({ id }) => myIds.has(id))).toEqual([])
    })

    it('gives a new ETag once a notification is added or read, never a stale 304', async () => {
      const user = await newUser(server.api)
      const order = await placeOrder(user.accessToken)
      const empty = await api().get('/notifications', { token: user.accessToken })
      const emptyTag = empty.headers.get('etag') as string
      expect(emptyTag).toEqual(expect.any(String))
      const unchanged = await api().get('/notifications', {
        token: user.accessToken,
        headers: { 'if-none-match': emptyTag },
      })
      expect(unchanged.status).toBe(304)

      await setStatus(order.id, 'PAID')
      const added = await api().get('/notifications', {
        token: user.accessToken,
        headers: { 'if-none-match': emptyTag },
      })
      expect(added.status).toBe(200)
      expect(added.body.data).toHaveLength(1)

      expect((await markRead(added.body.data[0].id, user.accessToken)).status).toBe(200)
      const read = await api().get('/notifications', {
        token: user.accessToken,
        headers: { 'if-none-match': added.headers.get('etag') as string },
      })
      expect(read.status).toBe(200)
      expect(read.body.data[0].read).toBe(true)
    })
  })

  describe('marking read', () => {
    it('answers 200 with the notification read, changes nothing else, and again alike', async () => {
      const user = await userWithNotifications(2)
      const [newer, older] = (await all(user.accessToken)) as [Notification, Notification]

      const marked = await markRead(older.id, user.accessToken)
      expect(marked.status, marked.text).toBe(200)
      expect(marked.body).toEqual({ data: { ...older, read: true } })
      expect(await all(user.accessToken)).toEqual([newer, { ...older, read: true }])

      const again = await markRead(older.id, user.accessToken)
      expect(again.status, again.text).toBe(200)
      expect(again.body).toEqual({ data: { ...older, read: true } })
      expect(await all(user.accessToken)).toEqual([newer, { ...older, read: true }])
    })

    it("answers 404 for another user's notification, which stays unread", async () => {
      const owner = await userWithNotifications(1)
      const intruder = await userWithNotifications(1)
      const [notice] = (await all(owner.accessToken)) as [Notification]
      const [intrudersOwn] = (await all(intruder.accessToken)) as [Notification]

      const refused = await markRead(notice.id, intruder.accessToken)
      expect(refused.status).toBe(404)
      expect(refused.body.error.code).toBe('NOT_FOUND')
      // As a notification that never was: the answer tells the intruder nothing more.
      const unknown = await markRead(2_147_483_647, intruder.accessToken)
      expect(unknown.status).toBe(404)
      expect(unknown.body.error.code).toBe('NOT_FOUND')

      expect(await all(owner.accessToken, '&unread=true')).toEqual([notice])
      expect(await all(intruder.accessToken)).toEqual([intrudersOwn])
    })

    it("lets no admin mark a user's notification read either", async () => {
      const owner = await userWithNotifications(1)
      const [notice] = (await all(owner.accessToken)) as [Notification]
      expect((await markRead(notice.id, admin)).status).toBe(404)
      expect(await all(owner.accessToken, '&unread=true')).toEqual([notice])
    })

    it.each([
      ['0', 'id'],
      ['abc', 'id'],
      ['-1', 'id'],
      ['1.5', 'id'],
      ['2147483648', 'id'],
    ])('answers 400 VALIDATION_ERROR for the id %s', async (id, field) => {
      const user = await userWithNotifications(1)
      const response = await markRead(id, user.accessToken)
      expect(response.status).toBe(400)
      expect(response.body.error.code).toBe('VALIDATION_ERROR')
      expect(Object.keys(response.body.error.details)).toEqual([field])
      expect((await all(user.accessToken, '&unread=true')).length).toBe(1)
    })
  })

  describe('refusals', () => {
    it.each([
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['page=0', 'page'],
      ['unread=yes', 'unread'],
    ])('answers 400 VALIDATION_ERROR for ?%s', async (query, field) => {
      const user = await newUser(server.api)
      const response = await api().get(`/notifications?${query}`, { token: user.accessToken })
      expect(response.status).toBe(400)
      expect(response.body.error.code).toBe('VALIDATION_ERROR')
      expect(Object.keys(response.body.error.details)).toEqual([field])
    })

    it('answers 401 without a token, or with a forged one, and marks nothing', async () => {
      const owner = await userWithNotifications(1)
      const [notice] = (await all(owner.accessToken)) as [Notification]
      for (const token of [undefined, 'forged']) {
        const listed = await api().get('/notifications', { token })
        expect(listed.status).toBe(401)
        expect(listed.body.error.code).toBe('UNAUTHENTICATED')
        const marked = await markRead(notice.id, token)
        expect(marked.status).toBe(401)
        expect(marked.body.error.code).toBe('UNAUTHENTICATED')
      }
      expect(await all(owner.accessToken, '&unread=true')).toEqual([notice])
    })
  })
})
