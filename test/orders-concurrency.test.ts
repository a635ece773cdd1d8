import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'

describe.each(backends)('orders under concurrency and retries on $name', (backend) => {
  let server: TestServer
  let admin: string
  let buyer: Awaited<ReturnType<typeof newUser>>
  const api = () => server.api

  const product = async (stock: number, price = 2) => {
    const response = await api().post('/products', {
      json: { name: 'Contended lamp', price, category: 'concurrency', stock },
      token: admin,
    })
    return response.body.data.id as number
  }
  const stockOf = async (id: number) => (await api().get(`/products/${id}`)).body.data.stock
  const ordersOf = async (token: string) =>
    (await api().get('/orders?limit=1', { token })).body.pagination.total as number
  const order = (
    items: object[],
    headers: Record<string, string> = {},
    token = buyer.accessToken,
  ) => api().post('/orders', { json: { items }, token, headers })

  beforeAll(async () => {
    server = await startServer(backend)
    admin = (await login(server.api, ADMIN)).accessToken
    buyer = await newUser(server.api)
  })
  afterAll(() => server?.close())

  describe('no overselling', () => {
    it('lets exactly as many of 50 concurrent orders through as the stock covers', async () => {
      const scarce = await product(20)
      const answers = await Promise.all(
        Array.from({ length: 50 }, () => order([{ productId: scarce, quantity: 1 }])),
      )
      const statuses = answers.map((answer) => answer.status)
      expect(statuses.filter((status) => status === 201)).toHaveLength(20)
      expect(statuses.filter((status) => status === 409)).toHaveLength(30)
      expect(await stockOf(scarce)).toBe(0)
    })

    it('takes locks in one order: orders naming two products either way round never deadlock', async () => {
      const [first, second] = [await product(15), await product(15)]
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, index) =>
          order(
            index % 2 === 0
              ? [
                  { productId: first, quantity: 1 },
                  { productId: second, quantity: 1 },
                ]
              : [
                  { productId: second, quantity: 1 },
                  { productId: first, quantity: 1 },
                ],
          ),
        ),
      )
      const statuses = answers.map((answer) => answer.status)
      expect(statuses.filter((status) => status === 201)).toHaveLength(15)
      expect(statuses.filter((status) => status === 409)).toHaveLength(25)
      expect([await stockOf(first), await stockOf(second)]).toEqual([0, 0])
    })

    it('gives stock back exactly once while cancels race new orders', async () => {
      const lamp = await product(10)
      const placed = await Promise.all(
        Array.from({ length: 5 }, () => order([{ productId: lamp, quantity: 2 }])),
      )
      expect(await stockOf(lamp)).toBe(0)
      const ids = placed.map((answer) => answer.body.data.id as number)
      const answers = await Promise.all([
        ...ids.flatMap((id) =>
          [1, 2].map(() => api().post(`/orders/${id}/cancel`, { token: admin })),
        ),
        ...Array.from({ length: 10 }, () => order([{ productId: lamp, quantity: 1 }])),
      ])
      const cancelled = answers.slice(0, 10).filter((answer) => answer.status === 200)
      const ordered = answers.slice(10).filter((answer) => answer.status === 201)
      expect(cancelled).toHaveLength(5)
      expect(await stockOf(lamp)).toBe(10 - ordered.length)
    })
  })

  describe('Idempotency-Key', () => {
    it('replays the first answer to a retry, creating one order and taking stock once', async () => {
      const lamp = await product(10)
      const key = randomUUID()
      const before = await ordersOf(buyer.accessToken)
      const first = await order([{ productId: lamp, quantity: 3 }], { 'idempotency-key': key })
      expect(first.status, first.text).toBe(201)
      expect(first.headers.get('idempotent-replayed')).toBeNull()
      const retry = await order([{ productId: lamp, quantity: 3 }], { 'idempotency-key': key })
      expect(retry.status).toBe(201)
      expect(retry.body).toEqual(first.body)
      expect(retry.headers.get('location')).toBe(first.headers.get('location'))
      expect(retry.headers.get('idempotent-replayed')).toBe('true')
      expect(await stockOf(lamp)).toBe(7)
      expect(await ordersOf(buyer.accessToken)).toBe(before + 1)
    })

    it('replays the answer as first given, even after the order changed', async () => {
      const lamp = await product(10)
      const key = randomUUID()
      const first = await order([{ productId: lamp, quantity: 1 }], { 'idempotency-key': key })
      await api().post(`/orders/${first.body.data.id}/cancel`, { token: buyer.accessToken })
      const retry = await order([{ productId: lamp, quantity: 1 }], { 'idempotency-key': key })
      expect(retry.body.data.status).toBe('PENDING')
      expect(await stockOf(lamp)).toBe(10)
    })

    it('runs concurrent requests with one key once', async () => {
      const lamp = await product(10)
      const key = randomUUID()
      const answers = await Promise.all(
        Array.from({ length: 8 }, () =>
          order([{ productId: lamp, quantity: 1 }], { 'idempotency-key': key }),
        ),
      )
      expect(answers.map((answer) => answer.status)).toEqual(Array(8).fill(201))
      expect(new Set(answers.map((answer) => answer.body.data.id)).size).toBe(1)
      expect(await stockOf(lamp)).toBe(9)
    })

    it('refuses the key with another body (422) and changes nothing', async () => {
      const lamp = await product(10)
      const key = randomUUID()
      await order([{ productId: lamp, quantity: 1 }], { 'idempotency-key': key })
      const before = await ordersOf(buyer.accessToken)
      const other = await order([{ productId: lamp, quantity: 2 }], { 'idempotency-key': key })
      expect(other.status).toBe(422)
      expect(other.body.error.code).toBe('UNPROCESSABLE')
      expect(await stockOf(lamp)).toBe(9)
      expect(await ordersOf(buyer.accessToken)).toBe(before)
    })

    it("keeps each user's keys apart", async () => {
      const lamp = await product(10)
      const key = randomUUID()
      const other = await newUser(server.api)
      const mine = await order([{ productId: lamp, quantity: 1 }], { 'idempotency-key': key })
      const theirs = await order(
        [{ productId: lamp, quantity: 1 }],
        { 'idempotency-key': key },
        other.accessToken,
      )
      expect(theirs.status).toBe(201)
      expect(theirs.body.data.id).not.toBe(mine.body.data.id)
      expect(theirs.headers.get('idempotent-replayed')).toBeNull()
    })

    it('remembers only placed orders: a refused request may be retried with its key', async () => {
      const lamp = await product(1)
      const key = randomUUID()
      const refused = await order([{ productId: lamp, quantity: 2 }], { 'idempotency-key': key })
      expect(refused.status).toBe(409)
      await api().patch(`/products/${lamp}`, { json: { stock: 5 }, token: admin })
      const retried = await order([{ productId: lamp, quantity: 2 }], { 'idempotency-key': key })
      expect(retried.status).toBe(201)
      expect(retried.headers.get('idempotent-replayed')).toBeNull()
    })

    it('forgets a key after 24 hours: the same request then places a new order', async () => {
      const lamp = await product(10)
      const key = randomUUID()
      const first = await order([{ productId: lamp, quantity: 1 }], { 'idempotency-key': key })
      await server.testDatabase.database.db.execute(
        sql`update idempotency_keys set created_at = now() - interval '24 hours 1 second' where key = ${key}`,
      )
      const later = await order([{ productId: lamp, quantity: 1 }], { 'idempotency-key': key })
      expect(later.status).toBe(201)
      expect(later.body.data.id).not.toBe(first.body.data.id)
      expect(await stockOf(lamp)).toBe(8)
    })

    it.each([
      ['empty', ''],
      ['longer than 255 characters', 'k'.repeat(256)],
      ['not printable ASCII', 'clé'],
    ])('refuses a key that is %s with 400', async (_, key) => {
      const lamp = await product(10)
      const response = await api().request('POST', '/orders', {
        json: { items: [{ productId: lamp, quantity: 1 }] },
        token: buyer.accessToken,
        headers: { 'idempotency-key': key },
      })
      expect(response.status, response.text).toBe(400)
      expect(await stockOf(lamp)).toBe(10)
    })
  })
})
