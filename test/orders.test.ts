import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'

describe.each(backends)('orders on $name', (backend) => {
  let server: TestServer
  let admin: string
  let alice: Awaited<ReturnType<typeof newUser>>
  let bob: Awaited<ReturnType<typeof newUser>>
  const api = () => server.api

  const product = async (price: number, stock: number) => {
    const response = await api().post('/products', {
      json: { name: `Item ${price}/${stock}`, price, category: 'orders', stock },
      token: admin,
    })
    expect(response.status, response.text).toBe(201)
    return response.body.data as { id: number; price: number }
  }
  const stockOf = async (id: number) => (await api().get(`/products/${id}`)).body.data.stock
  const order = (token: string, items: object[], headers?: Record<string, string>) =>
    api().post('/orders', { json: { items }, token, headers })
  const placed = async (token: string, items: object[]) => {
    const response = await order(token, items)
    expect(response.status, response.text).toBe(201)
    return response.body.data
  }
  const orderCount = async () =>
    (await api().get('/orders?limit=1', { token: admin })).body.pagination.total

  beforeAll(async () => {
    server = await startServer(backend)
    admin = (await login(server.api, ADMIN)).accessToken
    alice = await newUser(server.api)
    bob = await newUser(server.api)
  })
  afterAll(() => server?.close())

  describe('placing', () => {
    it('prices each item, sums the total, takes the stock and answers 201 with a location', async () => {
      const lamp = await product(19.99, 5)
      const bulb = await product(0.1, 10)
      const response = await order(alice.accessToken, [
        { productId: lamp.id, quantity: 2 },
        { productId: bulb.id, quantity: 3 },
      ])
      expect(response.status, response.text).toBe(201)
      const created = response.body.data
      expect(created).toMatchObject({
        userId: alice.user.id,
        status: 'PENDING',
        total: 40.28,
        items: [
          { productId: lamp.id, quantity: 2, unitPrice: 19.99 },
          { productId: bulb.id, quantity: 3, unitPrice: 0.1 },
        ],
      })
      expect(response.headers.get('location')).toBe(`/orders/${created.id}`)
      expect(created.updatedAt).toBe(created.createdAt)
      expect([await stockOf(lamp.id), await stockOf(bulb.id)]).toEqual([3, 7])
      expect(
        (await api().get(`/orders/${created.id}`, { token: alice.accessToken })).body.data,
      ).toEqual(created)
    })

    it('keeps the price of the moment the order was placed', async () => {
      const lamp = await product(5, 5)
      const created = await placed(alice.accessToken, [{ productId: lamp.id, quantity: 1 }])
      await api().patch(`/products/${lamp.id}`, { json: { price: 7 }, token: admin })
      const read = await api().get(`/orders/${created.id}`, { token: alice.accessToken })
      expect(read.body.data.items[0].unitPrice).toBe(5)
      expect(read.body.data.total).toBe(5)
    })

    it('merges lines that name one product into one line of the summed quantity', async () => {
      const lamp = await product(2.5, 10)
      const created = await placed(alice.accessToken, [
        { productId: lamp.id, quantity: 2 },
        { productId: lamp.id, quantity: 3 },
      ])
      expect(created.items).toEqual([{ productId: lamp.id, quantity: 5, unitPrice: 2.5 }])
      expect(created.total).toBe(12.5)
      expect(await stockOf(lamp.id)).toBe(5)
    })

    it('refuses with 409 when one product lacks the stock, and takes none from any', async () => {
      const plenty = await product(1, 10)
      const scarce = await product(1, 1)
      const before = await orderCount()
      const response = await order(alice.accessToken, [
        { productId: plenty.id, quantity: 5 },
        { productId: scarce.id, quantity: 2 },
      ])
      expect(response.status).toBe(409)
      expect(response.body.error.code).toBe('CONFLICT')
      expect(response.body.error.message).toContain(String(scarce.id))
      expect([await stockOf(plenty.id), await stockOf(scarce.id)]).toEqual([10, 1])
      expect(await orderCount()).toBe(before)
    })

    it('refuses an unknown or deleted product with 422, and takes nothing', async () => {
      const kept = await product(1, 10)
      const deleted = await product(1, 10)
      await api().delete(`/products/${deleted.id}`, { token: admin })
      const before = await orderCount()
      for (const productId of [deleted.id, 2_000_000_000]) {
        const response = await order(alice.accessToken, [
          { productId: kept.id, quantity: 1 },
          { productId, quantity: 1 },
        ])
        expect(response.status, response.text).toBe(422)
        expect(response.body.error.code).toBe('UNPROCESSABLE')
      }
      expect(await stockOf(kept.id)).toBe(10)
      expect(await orderCount()).toBe(before)
    })

    it.each([
      ['no items', { items: [] }, 'items'],
      ['a quantity of 0', { items: [{ productId: 1, quantity: 0 }] }, 'items.0.quantity'],
      ['a quantity past 1000', { items: [{ productId: 1, quantity: 1001 }] }, 'items.0.quantity'],
      ['a fractional quantity', { items: [{ productId: 1, quantity: 1.5 }] }, 'items.0.quantity'],
      ['a product id of 0', { items: [{ productId: 0, quantity: 1 }] }, 'items.0.productId'],
      ['a line without its product', { items: [{ quantity: 1 }] }, 'items.0.productId'],
      ['a field it does not know', { items: [{ productId: 1, quantity: 1 }], note: 'x' }, 'note'],
      [
        '51 lines',
        { items: Array.from({ length: 51 }, () => ({ productId: 1, quantity: 1 })) },
        'items',
      ],
    ])('refuses %s with 400 and stores nothing', async (_, body, field) => {
      const before = await orderCount()
      const response = await api().post('/orders', { json: body, token: alice.accessToken })
      expect(response.status, response.text).toBe(400)
      expect(response.body.error.code).toBe('VALIDATION_ERROR')
      expect(Object.keys(response.body.error.details).join()).toContain(field)
      expect(await orderCount()).toBe(before)
    })

    it('needs a token (401), checked before the body', async () => {
      const response = await api().post('/orders', { json: { items: [] } })
      expect(response.status).toBe(401)
      expect(response.body.error.code).toBe('UNAUTHENTICATED')
    })
  })

  describe('reading', () => {
    it("lists the caller's own orders newest first; an admin sees everyone's", async () => {
      const lamp = await product(1, 100)
      const carol = await newUser(server.api)
      const first = await placed(carol.accessToken, [{ productId: lamp.id, quantity: 1 }])
      const second = await placed(carol.accessToken, [{ productId: lamp.id, quantity: 2 }])
      await placed(bob.accessToken, [{ productId: lamp.id, quantity: 1 }])
      const own = await api().get('/orders', { token: carol.accessToken })
      expect(own.status).toBe(200)
      expect(own.body.data.map((each: { id: number }) => each.id)).toEqual([second.id, first.id])
      expect(own.body.pagination).toEqual({
        page: 1,
        limit: 10,
        total: 2,
        pages: 1,
        hasNext: false,
        hasPrev: false,
      })
      const all = await api().get('/orders?limit=100', { token: admin })
      const owners = new Set(all.body.data.map((each: { userId: number }) => each.userId))
      expect(owners).toContain(carol.user.id)
      expect(owners).toContain(bob.user.id)
      const paged = await api().get('/orders?limit=1&page=2', { token: carol.accessToken })
      expect(paged.body.data.map((each: { id: number }) => each.id)).toEqual([first.id])
      expect(paged.body.pagination).toMatchObject({
        total: 2,
        pages: 2,
        hasNext: false,
        hasPrev: true,
      })
    })

    it('filters by status', async () => {
      const lamp = await product(1, 100)
      const dave = await newUser(server.api)
      const kept = await placed(dave.accessToken, [{ productId: lamp.id, quantity: 1 }])
      const cancelled = await placed(dave.accessToken, [{ productId: lamp.id, quantity: 1 }])
      await api().post(`/orders/${cancelled.id}/cancel`, { token: dave.accessToken })
      const pending = await api().get('/orders?status=PENDING', { token: dave.accessToken })
      expect(pending.body.data.map((each: { id: number }) => each.id)).toEqual([kept.id])
      const bad = await api().get('/orders?status=LOST', { token: dave.accessToken })
      expect(bad.status).toBe(400)
    })

    it("answers another user's order 403, an unknown one 404, and any one to an admin", async () => {
      const lamp = await product(1, 10)
      const created = await placed(alice.accessToken, [{ productId: lamp.id, quantity: 1 }])
      const path = `/orders/${created.id}`
      expect((await api().get(path, { token: bob.accessToken })).status).toBe(403)
      expect((await api().get(path, { token: admin })).body.data).toEqual(created)
      expect((await api().get('/orders/2000000000', { token: alice.accessToken })).status).toBe(404)
      expect((await api().get(path)).status).toBe(401)
    })

    it('tags an order with an ETag and answers 304 to a client that holds it', async () => {
      const lamp = await product(1, 10)
      const created = await placed(alice.accessToken, [{ productId: lamp.id, quantity: 1 }])
      const first = await api().get(`/orders/${created.id}`, { token: alice.accessToken })
      const tag = first.headers.get('etag') ?? ''
      expect(tag).toMatch(/^"/)
      const again = await api().get(`/orders/${created.id}`, {
        token: alice.accessToken,
        headers: { 'if-none-match': tag },
      })
      expect(again.status).toBe(304)
    })
  })

  describe('status', () => {
    const moveTo = (id: number, status: string, token = admin) =>
      api().patch(`/orders/${id}`, { json: { status }, token })

    it('moves along PENDING → PAID → SHIPPED → DELIVERED by an admin', async () => {
      const lamp = await product(1, 10)
      const created = await placed(alice.accessToken, [{ productId: lamp.id, quantity: 1 }])
      for (const status of ['PAID', 'SHIPPED', 'DELIVERED']) {
        const response = await moveTo(created.id, status)
        expect(response.status, response.text).toBe(200)
        expect(response.body.data.status).toBe(status)
      }
      const read = (await api().get(`/orders/${created.id}`, { token: alice.accessToken })).body
        .data
      expect(read.status).toBe('DELIVERED')
      expect(Date.parse(read.updatedAt)).toBeGreaterThanOrEqual(Date.parse(read.createdAt))
    })

    it.each([
      ['PENDING', 'SHIPPED'],
      ['PENDING', 'DELIVERED'],
      ['PENDING', 'PENDING'],
      ['PAID', 'PENDING'],
      ['PAID', 'DELIVERED'],
      ['SHIPPED', 'CANCELLED'],
      ['DELIVERED', 'CANCELLED'],
      ['CANCELLED', 'PAID'],
    ])('refuses %s → %s with 409 and leaves the order as it was', async (from, to) => {
      const lamp = await product(1, 10)
      const created = await placed(alice.accessToken, [{ productId: lamp.id, quantity: 1 }])
      const path = { PENDING: [], PAID: ['PAID'], SHIPPED: ['PAID', 'SHIPPED'] }[from as 'PAID']
      for (const step of path ??
        (from === 'DELIVERED' ? ['PAID', 'SHIPPED', 'DELIVERED'] : ['CANCELLED'])) {
        expect((await moveTo(created.id, step)).status).toBe(200)
      }
      const response = await moveTo(created.id, to)
      expect(response.status, response.text).toBe(409)
      expect(response.body.error.code).toBe('CONFLICT')
      const read = await api().get(`/orders/${created.id}`, { token: admin })
      expect(read.body.data.status).toBe(from)
    })

    it('is an admin’s to change (403 for the owner), and 404 for an unknown order', async () => {
      const lamp = await product(1, 10)
      const created = await placed(alice.accessToken, [{ productId: lamp.id, quantity: 1 }])
      expect((await moveTo(created.id, 'PAID', alice.accessToken)).status).toBe(403)
      expect((await moveTo(2_000_000_000, 'PAID')).status).toBe(404)
      expect(
        (await api().patch(`/orders/${created.id}`, { json: { status: 'LOST' }, token: admin }))
          .status,
      ).toBe(400)
      expect((await api().get(`/orders/${created.id}`, { token: admin })).body.data.status).toBe(
        'PENDING',
      )
    })
  })

  describe('cancelling', () => {
    const cancel = (id: number, token: string) => api().post(`/orders/${id}/cancel`, { token })

    it('cancels a PENDING or PAID order of the owner and gives its stock back once', async () => {
      const lamp = await product(1, 10)
      for (const paid of [false, true]) {
        const created = await placed(alice.accessToken, [{ productId: lamp.id, quantity: 4 }])
        if (paid)
          await api().patch(`/orders/${created.id}`, { json: { status: 'PAID' }, token: admin })
        expect(await stockOf(lamp.id)).toBe(6)
        const response = await cancel(created.id, alice.accessToken)
        expect(response.status, response.text).toBe(200)
        expect(response.body.data.status).toBe('CANCELLED')
        expect(await stockOf(lamp.id)).toBe(10)
        expect((await cancel(created.id, alice.accessToken)).status).toBe(409)
        expect(await stockOf(lamp.id)).toBe(10)
      }
    })

    it("refuses another user's order (403) and a shipped one (409), changing nothing", async () => {
      const lamp = await product(1, 10)
      const created = await placed(alice.accessToken, [{ productId: lamp.id, quantity: 1 }])
      expect((await cancel(created.id, bob.accessToken)).status).toBe(403)
      await api().patch(`/orders/${created.id}`, { json: { status: 'PAID' }, token: admin })
      await api().patch(`/orders/${created.id}`, { json: { status: 'SHIPPED' }, token: admin })
      const response = await cancel(created.id, alice.accessToken)
      expect(response.status).toBe(409)
      expect(await stockOf(lamp.id)).toBe(9)
      expect((await cancel(2_000_000_000, admin)).status).toBe(404)
    })

    it('lets an admin cancel any order', async () => {
      const lamp = await product(1, 10)
      const created = await placed(alice.accessToken, [{ productId: lamp.id, quantity: 3 }])
      expect((await cancel(created.id, admin)).status).toBe(200)
      expect(await stockOf(lamp.id)).toBe(10)
    })

    it('ends racing cancels and payments in one valid state, the stock given back once', async () => {
      const lamp = await product(1, 10)
      const created = await placed(alice.accessToken, [{ productId: lamp.id, quantity: 5 }])
      const answers = await Promise.all([
        ...Array.from({ length: 8 }, () => cancel(created.id, alice.accessToken)),
        api().patch(`/orders/${created.id}`, { json: { status: 'PAID' }, token: admin }),
      ])
      const cancels = answers.slice(0, 8).map((answer) => answer.status)
      expect(cancels.filter((status) => status === 200)).toHaveLength(1)
      expect(cancels.filter((status) => status === 409)).toHaveLength(7)
      const final = (await api().get(`/orders/${created.id}`, { token: admin })).body.data
      expect(final.status).toBe('CANCELLED')
      expect(await stockOf(lamp.id)).toBe(10)
    })
  })
})
