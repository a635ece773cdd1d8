import { createHmac, randomUUID } from 'node:crypto'
import type { FormattedExecutionResult } from 'graphql'
import type { Client } from 'graphql-ws'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { collect, graphql, subscriptionsActive, wsClient } from './helpers/graphql.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'

const WEBHOOK_SECRET = 'a-webhook-secret-for-tests'
const ORDER = 'id userId status total items { productId quantity unitPrice } createdAt updatedAt'
const NOTIFICATION = 'id kind title body read createdAt'

describe.each(backends)('orders and notifications over GraphQL on $name', (backend) => {
  let server: TestServer
  let admin: string
  let alice: Awaited<ReturnType<typeof newUser>>
  let bob: Awaited<ReturnType<typeof newUser>>
  const clients: Client[] = []
  const api = () => server.api
  const query = (text: string, variables: Record<string, unknown>, token?: string) =>
    graphql(server.baseUrl, text, variables, token)
  const socket = (token?: string) => {
    const client = wsClient(server.baseUrl, token ? { authToken: token } : {})
    clients.push(client)
    return client
  }
  /** A refused subscription's one result: errors, as it starts, and nothing followed. */
  const refusal = (client: Client, text: string, variables: Record<string, unknown> = {}) =>
    new Promise<FormattedExecutionResult>((resolve) =>
      client.subscribe(
        { query: text, variables },
        { next: resolve, error: resolve, complete: () => {} },
      ),
    )
  const codeOf = (response: { body: { errors?: { extensions?: { code?: string } }[] } }) =>
    response.body.errors?.[0]?.extensions?.code

  async function placeOrder(token: string) {
    const product = await api().post('/products', {
      json: { name: 'Live lamp', price: 4.5, category: 'live', stock: 10 },
      token: admin,
    })
    const order = await api().post('/orders', {
      json: { items: [{ productId: product.body.data.id, quantity: 2 }] },
      token,
    })
    expect(order.status, order.text).toBe(201)
    return order.body.data as { id: number; userId: number }
  }
  const setStatus = (id: number, status: string) =>
    api().patch(`/orders/${id}`, { json: { status }, token: admin })

  function payByWebhook(orderId: number) {
    const body = JSON.stringify({ id: 'evt', type: 'payment.succeeded', data: { orderId } })
    const timestamp = String(Math.floor(Date.now() / 1000))
    const hmac = createHmac('sha256', WEBHOOK_SECRET).update(`${timestamp}.${body}`).digest('hex')
    return api().post('/webhooks/payments', {
      raw: body,
      headers: {
        'content-type': 'application/json',
        'x-webhook-id': randomUUID(),
        'x-webhook-timestamp': timestamp,
        'x-webhook-signature': `sha256=${hmac}`,
      },
    })
  }

  beforeAll(async () => {
    server = await startServer(backend, { WEBHOOK_SECRET })
    admin = (await login(server.api, ADMIN)).accessToken
    alice = await newUser(server.api)
    bob = await newUser(server.api)
  })
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.dispose()))
  })
  afterAll(() => server?.close())

  describe('order(id)', () => {
    const ORDER_QUERY = `query ($id: ID!) { order(id: $id) { ${ORDER} } }`

    it('answers the owner and an admin with the order as REST shows it', async () => {
      const placed = await placeOrder(alice.accessToken)
      const rest = (await api().get(`/orders/${placed.id}`, { token: alice.accessToken })).body.data
      for (const token of [alice.accessToken, admin]) {
        const response = await query(ORDER_QUERY, { id: String(placed.id) }, token)
        expect(response.body.errors).toBeUndefined()
        expect(response.body.data.order).toEqual({
          ...rest,
          id: String(rest.id),
          userId: String(rest.userId),
          items: rest.items.map((item: { productId: number }) => ({
            ...item,
            productId: String(item.productId),
          })),
        })
      }
    })

    it.each([
      ["another user's order", 'bob', 'FORBIDDEN'],
      ['an unknown id', 'alice', 'NOT_FOUND'],
      ['an id no order can have', 'alice', 'NOT_FOUND'],
      ['no token', undefined, 'UNAUTHENTICATED'],
    ])('fails for %s with %s', async (name, who, code) => {
      const placed = await placeOrder(alice.accessToken)
      const id =
        name === 'an unknown id' ? '2000000000' : name.includes('no order') ? 'x' : placed.id
      const token = who === 'bob' ? bob.accessToken : who ? alice.accessToken : undefined
      const response = await query(ORDER_QUERY, { id: String(id) }, token)
      expect(codeOf(response)).toBe(code)
      expect(response.body.data?.order ?? null).toBeNull()
    })
  })

  describe('notifications', () => {
    it('tells the owner of each status change, newest first, theirs only, over both APIs', async () => {
      const carol = await newUser(server.api)
      const placed = await placeOrder(carol.accessToken)
      await setStatus(placed.id, 'PAID')
      await api().post(`/orders/${placed.id}/cancel`, { token: carol.accessToken })
      await setStatus((await placeOrder(bob.accessToken)).id, 'PAID')

      const rest = await api().get('/notifications', { token: carol.accessToken })
      expect(rest.body.data.map((each: { kind: string }) => each.kind)).toEqual([
        'order.cancelled',
        'order.paid',
      ])
      expect(rest.body.data[1]).toMatchObject({
        title: `Order #${placed.id} is paid`,
        read: false,
      })
      expect(rest.body.pagination).toMatchObject({ total: 2, pages: 1 })

      const live = await query(`{ notifications { ${NOTIFICATION} } }`, {}, carol.accessToken)
      expect(live.body.data.notifications).toEqual(
        rest.body.data.map((each: { id: number }) => ({ ...each, id: String(each.id) })),
      )
    })

    it('marks one read, once or twice, for its owner only', async () => {
      const dave = await newUser(server.api)
      await setStatus((await placeOrder(dave.accessToken)).id, 'PAID')
      const [notice] = (await api().get('/notifications', { token: dave.accessToken })).body.data
      const MARK = `mutation ($id: ID!) { markNotificationRead(id: $id) { id read } }`

      const theirs = await query(MARK, { id: String(notice.id) }, bob.accessToken)
      expect(codeOf(theirs)).toBe('NOT_FOUND')
      const viaRest = await api().post(`/notifications/${notice.id}/read`, {
        token: bob.accessToken,
      })
      expect(viaRest.status).toBe(404)
      const unread = await api().get('/notifications?unread=true', { token: dave.accessToken })
      expect(unread.body.data).toHaveLength(1)

      for (let time = 0; time < 2; time += 1) {
        const marked = await query(MARK, { id: String(notice.id) }, dave.accessToken)
        expect(marked.body.data.markNotificationRead).toEqual({ id: String(notice.id), read: true })
      }
      const after = await api().get('/notifications?unread=true', { token: dave.accessToken })
      expect(after.body.data).toEqual([])
      const restMark = await api().post(`/notifications/${notice.id}/read`, {
        token: dave.accessToken,
      })
      expect(restMark.body.data).toMatchObject({ id: notice.id, read: true })
    })

    it.each([
      ['a limit of 0', { limit: 0 }],
      ['a limit of 101', { limit: 101 }],
      ['before that is no id', { before: 'abc' }],
    ])('refuses %s with BAD_USER_INPUT', async (_, variables) => {
      const response = await query(
        'query ($limit: Int, $before: ID) { notifications(limit: $limit, before: $before) { id } }',
        variables,
        alice.accessToken,
      )
      expect(codeOf(response)).toBe('BAD_USER_INPUT')
    })

    it('needs a token', async () => {
      expect(codeOf(await query('{ notifications { id } }', {}))).toBe('UNAUTHENTICATED')
      expect((await api().get('/notifications')).status).toBe(401)
    })
  })

  describe('live', () => {
    const ORDER_UPDATED = `subscription ($id: ID!) { orderUpdated(orderId: $id) { id status items { quantity } } }`

    it('delivers every status change to the owner and an admin, whichever way it came', async () => {
      const placed = await placeOrder(alice.accessToken)
      const id = String(placed.id)
      const owner = collect(socket(alice.accessToken), ORDER_UPDATED, { id })
      const watcher = collect(socket(admin), ORDER_UPDATED, { id })
      await subscriptionsActive(server.events, 2)

      expect((await payByWebhook(placed.id)).body.data.applied).toBe(true)
      // A refused change is not a change: had it published, its event would come between.
      expect((await setStatus(placed.id, 'DELIVERED')).status).toBe(409)
      expect(
        (await api().post(`/orders/${placed.id}/cancel`, { token: alice.accessToken })).status,
      ).toBe(200)

      const expected = ['PAID', 'CANCELLED'].map((status) => ({
        orderUpdated: { id, status, items: [{ quantity: 2 }] },
      }))
      expect(await owner.until(2)).toEqual(expected)
      expect(await watcher.until(2)).toEqual(expected)
    })

    it("refuses another user's order (FORBIDDEN) and an anonymous socket (UNAUTHENTICATED)", async () => {
      const placed = await placeOrder(alice.accessToken)
      const id = String(placed.id)
      for (const [token, code] of [
        [bob.accessToken, 'FORBIDDEN'],
        [undefined, 'UNAUTHENTICATED'],
      ] as const) {
        const refused = await refusal(socket(token), ORDER_UPDATED, { id })
        expect(refused.errors?.[0]?.extensions?.code).toBe(code)
      }
    })

    it("delivers each user's notifications to that user alone", async () => {
      const erin = await newUser(server.api)
      const frank = await newUser(server.api)
      const SUBSCRIPTION = `subscription { notificationAdded { ${NOTIFICATION} } }`
      const erinsFeed = collect(socket(erin.accessToken), SUBSCRIPTION)
      const franksFeed = collect(socket(frank.accessToken), SUBSCRIPTION)
      await subscriptionsActive(server.events, 2)

      await setStatus((await placeOrder(erin.accessToken)).id, 'PAID')
      const franksOrder = await placeOrder(frank.accessToken)
      await setStatus(franksOrder.id, 'PAID')

      const [erins] = await erinsFeed.until(1)
      expect(erins.notificationAdded).toMatchObject({ kind: 'order.paid', read: false })
      const [franks] = await franksFeed.until(1)
      expect(franks.notificationAdded.title).toBe(`Order #${franksOrder.id} is paid`)
      // Frank's first event is his own; Erin's change, made before it, never reached him.
      expect(franksFeed.items).toHaveLength(1)
      expect(erinsFeed.items).toHaveLength(1)
    })

    it('needs a token for notificationAdded', async () => {
      const refused = await refusal(socket(), 'subscription { notificationAdded { id } }')
      expect(refused.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED')
    })
  })
})
