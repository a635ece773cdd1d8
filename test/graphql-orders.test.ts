import { createHmac, randomUUID } from 'node:crypto'
import type { Client } from 'graphql-ws'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import {
  collect,
  type GraphQLResponse,
  graphql,
  subscriptionsActive,
  wsClient,
} from './helpers/graphql.js'
import { redisUrl } from './helpers/redis.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'

const WEBHOOK_SECRET = 'a-webhook-secret-for-tests'

const ORDER_FIELDS =
  'id userId status total items { productId quantity unitPrice } createdAt updatedAt'
const NOTIFICATION_FIELDS = 'id kind title body read createdAt'

const ORDER = `query Order($id: ID!) { order(id: $id) { ${ORDER_FIELDS} } }`
const NOTIFICATIONS = `query Notifications($limit: Int, $before: ID, $unreadOnly: Boolean) {
  notifications(limit: $limit, before: $before, unreadOnly: $unreadOnly) { ${NOTIFICATION_FIELDS} }
}`
const MARK_READ = `mutation MarkRead($id: ID!) {
  markNotificationRead(id: $id) { ${NOTIFICATION_FIELDS} }
}`
const ORDER_UPDATED = `subscription OrderUpdated($orderId: ID!) {
  orderUpdated(orderId: $orderId) { ${ORDER_FIELDS} }
}`
const NOTIFICATION_ADDED = `subscription { notificationAdded { ${NOTIFICATION_FIELDS} } }`

interface RestOrder {
  id: number
  userId: number
  status: string
  total: number
  items: { productId: number; quantity: number; unitPrice: number }[]
  createdAt: string
  updatedAt: string
}
interface RestNotification {
  id: number
  kind: string
  title: string
  body: string
  read: boolean
  createdAt: string
}
type User = Awaited<ReturnType<typeof newUser>>

/** An order as GraphQL shows it: its ids are IDs (strings). */
const asGraphQLOrder = (order: RestOrder) => ({
  ...order,
  id: String(order.id),
  userId: String(order.userId),
  items: order.items.map((item) => ({ ...item, productId: String(item.productId) })),
})
const asGraphQLNotification = (notification: RestNotification) => ({
  ...notification,
  id: String(notification.id),
})
const codesOf = (response: GraphQLResponse) =>
  (response.body.errors ?? []).map((error) => error.extensions?.code)

/** Every bus the service can run on here: in-process, and Redis when TEST_REDIS_URL is set. */
const variants = backends.flatMap((backend) => [
  { backend, label: `${backend.name}, in-process bus`, environment: {} as Record<string, string> },
  ...(redisUrl
    ? [{ backend, label: `${backend.name}, Redis bus`, environment: { REDIS_URL: redisUrl } }]
    : []),
])

describe.each(variants)(
  'GraphQL orders and notifications on $label',
  ({ backend, environment }) => {
    let server: TestServer
    let admin: string
    let lamp: number
    let bulb: number
    const clients: Client[] = []
    const api = () => server.api

    const query = (text: string, variables: Record<string, unknown>, token?: string) =>
      graphql(server.baseUrl, text, variables, token)
    /** The data of an operation that must succeed. */
    const dataOf = async (text: string, variables: Record<string, unknown>, token?: string) => {
      const response = await query(text, variables, token)
      expect(response.body.errors, JSON.stringify(response.body)).toBeUndefined()
      return response.body.data
    }
    const notificationsOf = async (token: string, variables: Record<string, unknown> = {}) =>
      (await dataOf(NOTIFICATIONS, variables, token)).notifications as ReturnType<
        typeof asGraphQLNotification
      >[]

    /** A PENDING order of two products, by the holder of `token`. */
    const placeOrder = async (token: string): Promise<RestOrder> => {
      const response = await api().post('/orders', {
        json: {
          items: [
            { productId: bulb, quantity: 3 },
            { productId: lamp, quantity: 2 },
          ],
        },
        token,
      })
      expect(response.status, response.text).toBe(201)
      return response.body.data
    }
    const setStatus = async (id: number, status: string) => {
      const response = await api().patch(`/orders/${id}`, { json: { status }, token: admin })
      expect(response.status, response.text).toBe(200)
      return response.body.data as RestOrder
    }
    const cancel = async (id: number, token: string) => {
      const response = await api().post(`/orders/${id}/cancel`, { token })
      expect(response.status, response.text).toBe(200)
      return response.body.data as RestOrder
    }
    /** Every notification of the caller over REST, newest first. */
    const restNotifications = async (token: string) => {
      const response = await api().get('/notifications?limit=100', { token })
      expect(response.status, response.text).toBe(200)
      return response.body.data as RestNotification[]
    }

    /** A payment provider's `payment.succeeded`, signed as it signs them. */
    function signedPayment(orderId: number, { secret = WEBHOOK_SECRET } = {}) {
      const body = JSON.stringify({
        id: `evt_${randomUUID()}`,
        type: 'payment.succeeded',
        data: { orderId },
      })
      const timestamp = String(Math.floor(Date.now() / 1000))
      const signature = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')
      return {
        body,
        headers: {
          'content-type': 'application/json',
          'x-webhook-timestamp': timestamp,
          'x-webhook-id': randomUUID(),
          'x-webhook-signature': `sha256=${signature}`,
        },
      }
    }
    const deliver = ({ body, headers }: ReturnType<typeof signedPayment>) =>
      api().post('/webhooks/payments', { raw: body, headers })

    const socket = (token?: string) => {
      const client = wsClient(server.baseUrl, token ? { authToken: token } : {})
      clients.push(client)
      return client
    }
    /**
     * A subscription expected to be refused, while the server holds no live one: all it
     * answers, and the codes of its first answer (graphql-ws hands a refusal as a `next`
     * of errors, or as `error`), or LIVE should the server start it instead.
     */
    function refused(client: Client, text: string, variables: Record<string, unknown> = {}) {
      const answers: unknown[] = []
      let answered = false
      const first = new Promise<string[]>((resolve) => {
        const settle = (answer: unknown) => {
          answers.push(answer)
          answered = true
          const errors = Array.isArray(answer)
            ? answer
            : ((answer as { errors?: unknown[] }).errors ?? [])
          resolve(
            errors.map(
              (error) => (error as { extensions?: { code?: string } }).extensions?.code ?? '',
            ),
          )
        }
        client.subscribe(
          { query: text, variables },
          { next: settle, error: settle, complete: () => {} },
        )
      })
      // A subscription that goes live instead fails at once, not at the test's timeout.
      const wentLive = (async () => {
        while (!answered) {
          if (server.events.activeSubscriptions() > 0) return ['LIVE']
          await new Promise((resolve) => setTimeout(resolve, 5))
        }
        return []
      })()
      return { answers, codes: Promise.race([first, wentLive]) }
    }

    beforeAll(async () => {
      server = await startServer(backend, { WEBHOOK_SECRET, ...environment })
      admin = (await login(server.api, ADMIN)).accessToken
      const product = async (name: string, price: number) => {
        const response = await api().post('/products', {
          json: { name, price, category: 'graphql-orders', stock: 100_000 },
          token: admin,
        })
        expect(response.status, response.text).toBe(201)
        return response.body.data.id as number
      }
      lamp = await product('Followed lamp', 24.99)
      bulb = await product('Followed bulb', 0.35)
    })
    afterEach(async () => {
      await Promise.all(clients.splice(0).map((client) => client.dispose()))
      // Each test starts with no live subscription, so its subscriptionsActive counts are its own.
      await expect.poll(() => server.events.activeSubscriptions()).toBe(0)
    })
    afterAll(() => server?.close())

    describe('order(id)', () => {
      it('answers its owner and an admin with the order as REST shows it, status included', async () => {
        const owner = await newUser(server.api)
        const placed = await placeOrder(owner.accessToken)
        expect(placed.items.map(({ productId }) => productId)).toEqual(
          [lamp, bulb].sort((a, b) => a - b),
        )
        for (const token of [owner.accessToken, admin]) {
          expect((await dataOf(ORDER, { id: String(placed.id) }, token)).order).toEqual(
            asGraphQLOrder(placed),
          )
        }
        const paid = await setStatus(placed.id, 'PAID')
        expect(paid.status).toBe('PAID')
        for (const token of [owner.accessToken, admin]) {
          expect((await dataOf(ORDER, { id: String(placed.id) }, token)).order).toEqual(
            asGraphQLOrder(paid),
          )
        }
      })

      it("fails FORBIDDEN for another user's order, and tells nothing of it", async () => {
        const owner = await newUser(server.api)
        const other = await newUser(server.api)
        const placed = await placeOrder(owner.accessToken)
        const response = await query(ORDER, { id: String(placed.id) }, other.accessToken)
        expect(codesOf(response)).toEqual(['FORBIDDEN'])
        expect(response.body.errors?.[0]).toMatchObject({ path: ['order'] })
        expect(response.body.data).toEqual({ order: null })
        expect(JSON.stringify(response.body)).not.toContain(String(placed.total))
      })

      it.each([
        ['an id no order has', '2147483647'],
        ['the id 0', '0'],
        ['an id that is no number', 'abc'],
      ])('fails NOT_FOUND for %s, for a user and an admin alike', async (_, id) => {
        const user = await newUser(server.api)
        for (const token of [user.accessToken, admin]) {
          const response = await query(ORDER, { id }, token)
          expect(codesOf(response)).toEqual(['NOT_FOUND'])
          expect(response.body.data).toEqual({ order: null })
        }
      })

      it('fails UNAUTHENTICATED without a token, or with a forged one', async () => {
        const owner = await newUser(server.api)
        const placed = await placeOrder(owner.accessToken)
        for (const token of [undefined, 'forged']) {
          const response = await query(ORDER, { id: String(placed.id) }, token)
          expect(codesOf(response)).toEqual(['UNAUTHENTICATED'])
          expect(response.body.data?.order ?? null).toBeNull()
        }
      })
    })

    describe('notifications', () => {
      it("lists the caller's own, newest first, as REST does, whichever way the changes came", async () => {
        const owner = await newUser(server.api)
        const other = await newUser(server.api)
        const first = await placeOrder(owner.accessToken)
        const second = await placeOrder(owner.accessToken)
        const theirs = await placeOrder(other.accessToken)
        const payment = await deliver(signedPayment(first.id))
        expect(payment.status, payment.text).toBe(200)
        expect(payment.body.data.applied).toBe(true)
        await setStatus(theirs.id, 'PAID')
        await setStatus(first.id, 'SHIPPED')
        await cancel(second.id, owner.accessToken)
        await cancel(theirs.id, admin)

        const listed = await notificationsOf(owner.accessToken)
        expect(listed.map(({ kind, title }) => ({ kind, title }))).toEqual([
          { kind: 'order.cancelled', title: `Order #${second.id} was cancelled` },
          { kind: 'order.shipped', title: `Order #${first.id} has shipped` },
          { kind: 'order.paid', title: `Order #${first.id} is paid` },
        ])
        expect(listed).toEqual(
          (await restNotifications(owner.accessToken)).map(asGraphQLNotification),
        )
        expect(listed.every(({ read }) => read === false)).toBe(true)
      })

      it('gives 20 by default, 1 to 100 with limit, and pages back with before', async () => {
        const user = await newUser(server.api)
        // 23 notifications: seven orders paid, shipped and delivered, one paid and cancelled.
        for (let index = 0; index < 7; index += 1) {
          const order = await placeOrder(user.accessToken)
          for (const status of ['PAID', 'SHIPPED', 'DELIVERED']) await setStatus(order.id, status)
        }
        const last = await placeOrder(user.accessToken)
        await setStatus(last.id, 'PAID')
        await cancel(last.id, user.accessToken)
        const everything = (await restNotifications(user.accessToken)).map(asGraphQLNotification)
        expect(everything).toHaveLength(23)

        expect(await notificationsOf(user.accessToken)).toEqual(everything.slice(0, 20))
        expect(await notificationsOf(user.accessToken, { limit: 100 })).toEqual(everything)
        expect(await notificationsOf(user.accessToken, { limit: 1 })).toEqual(
          everything.slice(0, 1),
        )

        const pages = []
        let before: string | undefined
        for (;;) {
          const page = await notificationsOf(user.accessToken, { limit: 8, before })
          if (page.length === 0) break
          pages.push(page)
          before = page.at(-1)?.id
        }
        expect(pages.map((page) => page.length)).toEqual([8, 8, 7])
        expect(pages.flat()).toEqual(everything)
        const newest = everything[0]?.id as string
        expect(await notificationsOf(user.accessToken, { before: newest })).toEqual(
          everything.slice(1, 21),
        )
      })

      it('keeps the unread ones with unreadOnly', async () => {
        const user = await newUser(server.api)
        const order = await placeOrder(user.accessToken)
        for (const status of ['PAID', 'SHIPPED', 'DELIVERED']) await setStatus(order.id, status)
        const [delivered, shipped, paid] = await notificationsOf(user.accessToken)
        await dataOf(MARK_READ, { id: shipped?.id }, user.accessToken)
        expect(await notificationsOf(user.accessToken, { unreadOnly: true })).toEqual([
          delivered,
          paid,
        ])
        expect(await notificationsOf(user.accessToken, { unreadOnly: true, limit: 1 })).toEqual([
          delivered,
        ])
        expect(
          await notificationsOf(user.accessToken, { unreadOnly: true, before: delivered?.id }),
        ).toEqual([paid])
        expect(await notificationsOf(user.accessToken, { unreadOnly: false })).toEqual([
          delivered,
          { ...shipped, read: true },
          paid,
        ])
      })

      it.each([
        ['limit 0', { limit: 0 }, 'limit'],
        ['limit 101', { limit: 101 }, 'limit'],
        ['a before that is no id', { before: 'abc' }, 'before'],
      ])('refuses %s with BAD_USER_INPUT', async (_, variables, field) => {
        const user = await newUser(server.api)
        const response = await query(NOTIFICATIONS, variables, user.accessToken)
        expect(codesOf(response)).toEqual(['BAD_USER_INPUT'])
        expect(response.body.errors?.[0]?.extensions?.details).toEqual({
          [field]: [expect.any(String)],
        })
        expect(response.body.data ?? null).toBeNull()
      })

      it('fails UNAUTHENTICATED without a token', async () => {
        const response = await query(NOTIFICATIONS, {})
        expect(codesOf(response)).toEqual(['UNAUTHENTICATED'])
        expect(response.body.data ?? null).toBeNull()
      })
    })

    describe('markNotificationRead', () => {
      it('marks one of the caller’s read, and again alike, leaving the others unread', async () => {
        const user = await newUser(server.api)
        const order = await placeOrder(user.accessToken)
        await setStatus(order.id, 'PAID')
        await cancel(order.id, user.accessToken)
        const [cancelled, paid] = await notificationsOf(user.accessToken)
        for (let time = 0; time < 2; time += 1) {
          const marked = await dataOf(MARK_READ, { id: paid?.id }, user.accessToken)
          expect(marked.markNotificationRead).toEqual({ ...paid, read: true })
        }
        expect(await notificationsOf(user.accessToken)).toEqual([
          cancelled,
          { ...paid, read: true },
        ])
        const rest = await restNotifications(user.accessToken)
        expect(rest.map(({ read }) => read)).toEqual([false, true])
      })

      it("fails NOT_FOUND for another user's notification, an admin's attempt too; it stays unread", async () => {
        const owner = await newUser(server.api)
        const other = await newUser(server.api)
        const order = await placeOrder(owner.accessToken)
        await setStatus(order.id, 'PAID')
        const [notice] = await notificationsOf(owner.accessToken)
        for (const token of [other.accessToken, admin]) {
          const response = await query(MARK_READ, { id: notice?.id }, token)
          expect(codesOf(response)).toEqual(['NOT_FOUND'])
          expect(response.body.data ?? null).toBeNull()
        }
        expect(await notificationsOf(owner.accessToken, { unreadOnly: true })).toEqual([notice])
      })

      it.each([
        ['an id no notification has', '2147483647'],
        ['an id that is no number', 'abc'],
      ])('fails NOT_FOUND for %s', async (_, id) => {
        const user = await newUser(server.api)
        expect(codesOf(await query(MARK_READ, { id }, user.accessToken))).toEqual(['NOT_FOUND'])
      })

      it('fails UNAUTHENTICATED without a token, and marks nothing', async () => {
        const owner = await newUser(server.api)
        const order = await placeOrder(owner.accessToken)
        await setStatus(order.id, 'PAID')
        const [notice] = await notificationsOf(owner.accessToken)
        const response = await query(MARK_READ, { id: notice?.id })
        expect(codesOf(response)).toEqual(['UNAUTHENTICATED'])
        expect(await notificationsOf(owner.accessToken, { unreadOnly: true })).toEqual([notice])
      })
    })

    describe('orderUpdated', () => {
      /** What a subscriber receives when the order reaches `status`. */
      const update = (placed: RestOrder, status: string) => ({
        orderUpdated: { ...asGraphQLOrder(placed), status, updatedAt: expect.any(String) },
      })

      it("sends the order first, then a signed payment webhook's and an admin's PATCHes, to the owner and an admin, in order", async () => {
        const owner = await newUser(server.api)
        const placed = await placeOrder(owner.accessToken)
        const another = await placeOrder(owner.accessToken)
        const variables = { orderId: String(placed.id) }
        const ownerFeed = collect(socket(owner.accessToken), ORDER_UPDATED, variables)
        const adminFeed = collect(socket(admin), ORDER_UPDATED, variables)
        // The order as it is, before any change.
        expect(await ownerFeed.until(1)).toEqual([update(placed, 'PENDING')])
        expect(await adminFeed.until(1)).toEqual([update(placed, 'PENDING')])

        // What changes nothing publishes nothing; had it, its event would come out of turn.
        const forged = await deliver(signedPayment(placed.id, { secret: 'not-the-webhook-secret' }))
        expect(forged.status).toBe(401)
        const payment = signedPayment(placed.id)
        const paid = await deliver(payment)
        expect(paid.status, paid.text).toBe(200)
        expect(paid.body.data).toEqual({
          id: payment.headers['x-webhook-id'],
          duplicate: false,
          applied: true,
        })
        const repeat = await deliver(payment)
        expect(repeat.body.data).toMatchObject({ duplicate: true })
        const late = await deliver(signedPayment(placed.id))
        expect(late.body.data).toMatchObject({ duplicate: false, applied: false })
        const again = await api().patch(`/orders/${placed.id}`, {
          json: { status: 'PAID' },
          token: admin,
        })
        expect(again.status).toBe(409)
        await setStatus(another.id, 'PAID')
        await setStatus(placed.id, 'SHIPPED')
        await setStatus(placed.id, 'DELIVERED')

        const expected = ['PENDING', 'PAID', 'SHIPPED', 'DELIVERED'].map((status) =>
          update(placed, status),
        )
        const delivered = await ownerFeed.until(4)
        expect(delivered).toEqual(expected)
        expect(await adminFeed.until(4)).toEqual(expected)
        const times = delivered.map((event) => Date.parse(event.orderUpdated.updatedAt))
        expect(times).toEqual([...times].sort((a, b) => a - b))
        expect(times[0]).toBeGreaterThanOrEqual(Date.parse(placed.createdAt))
        // The last event is the order as it now is.
        expect(delivered.at(-1)?.orderUpdated).toEqual(
          (await dataOf(ORDER, { id: String(placed.id) }, owner.accessToken)).order,
        )
      })

      it("delivers an admin's PATCH and the owner's cancel, and an admin's cancel of a PENDING order", async () => {
        const owner = await newUser(server.api)
        const placed = await placeOrder(owner.accessToken)
        const pending = await placeOrder(owner.accessToken)
        const ownerClient = socket(owner.accessToken)
        const adminClient = socket(admin)
        const ownerFeed = collect(ownerClient, ORDER_UPDATED, { orderId: String(placed.id) })
        const adminFeed = collect(adminClient, ORDER_UPDATED, { orderId: String(placed.id) })
        const pendingFeed = collect(ownerClient, ORDER_UPDATED, { orderId: String(pending.id) })
        const adminPendingFeed = collect(adminClient, ORDER_UPDATED, {
          orderId: String(pending.id),
        })
        for (const feed of [ownerFeed, adminFeed, pendingFeed, adminPendingFeed]) {
          await feed.until(1)
        }

        await setStatus(placed.id, 'PAID')
        // The owner may not move its order along (403): no event.
        const byOwner = await api().patch(`/orders/${placed.id}`, {
          json: { status: 'SHIPPED' },
          token: owner.accessToken,
        })
        expect(byOwner.status).toBe(403)
        await cancel(pending.id, admin)
        const cancelled = await cancel(placed.id, owner.accessToken)
        expect(cancelled.status).toBe('CANCELLED')

        const expected = ['PENDING', 'PAID', 'CANCELLED'].map((status) => update(placed, status))
        expect(await ownerFeed.until(3)).toEqual(expected)
        expect(await adminFeed.until(3)).toEqual(expected)
        const pendingExpected = [update(pending, 'PENDING'), update(pending, 'CANCELLED')]
        expect(await pendingFeed.until(2)).toEqual(pendingExpected)
        expect(await adminPendingFeed.until(2)).toEqual(pendingExpected)
        // The event carries the order as the cancel answered it.
        expect(ownerFeed.items.at(-1)?.orderUpdated).toEqual(asGraphQLOrder(cancelled))
      })

      it("fails FORBIDDEN for another user's order, UNAUTHENTICATED anonymous, NOT_FOUND for none, and delivers them nothing", async () => {
        const owner = await newUser(server.api)
        const other = await newUser(server.api)
        const placed = await placeOrder(owner.accessToken)
        const variables = { orderId: String(placed.id) }
        const refusals = [
          [refused(socket(other.accessToken), ORDER_UPDATED, variables), 'FORBIDDEN'],
          [refused(socket(), ORDER_UPDATED, variables), 'UNAUTHENTICATED'],
          [
            refused(socket(owner.accessToken), ORDER_UPDATED, { orderId: '2147483647' }),
            'NOT_FOUND',
          ],
        ] as const
        for (const [refusal, code] of refusals) expect(await refusal.codes).toEqual([code])
        expect(server.events.activeSubscriptions()).toBe(0)

        const ownerFeed = collect(socket(owner.accessToken), ORDER_UPDATED, variables)
        await ownerFeed.until(1)
        await setStatus(placed.id, 'PAID')
        expect(await ownerFeed.until(2)).toEqual([
          update(placed, 'PENDING'),
          update(placed, 'PAID'),
        ])
        // The owner has the event: the refused subscribers had their only answer, the refusal.
        for (const [refusal] of refusals) expect(refusal.answers).toHaveLength(1)
      })
    })

    describe('notificationAdded', () => {
      it('delivers each subscriber its own notifications only, whichever way they came', async () => {
        const carol = await newUser(server.api)
        const dave = await newUser(server.api)
        const carolsFeed = collect(socket(carol.accessToken), NOTIFICATION_ADDED)
        const davesFeed = collect(socket(dave.accessToken), NOTIFICATION_ADDED)
        const adminsFeed = collect(socket(admin), NOTIFICATION_ADDED)
        await subscriptionsActive(server.events, 3)

        const davesOrder = await placeOrder(dave.accessToken)
        const carolsFirst = await placeOrder(carol.accessToken)
        const carolsSecond = await placeOrder(carol.accessToken)
        const adminsOrder = await placeOrder(admin)
        // Each subscriber's own event comes after others' changes, so a leak would come first.
        await setStatus(davesOrder.id, 'PAID')
        expect((await deliver(signedPayment(carolsFirst.id))).body.data.applied).toBe(true)
        await cancel(carolsFirst.id, carol.accessToken)
        await setStatus(davesOrder.id, 'SHIPPED')
        await setStatus(adminsOrder.id, 'PAID')
        await setStatus(carolsSecond.id, 'PAID')
        await setStatus(davesOrder.id, 'DELIVERED')

        const titles = (items: { notificationAdded: { title: string } }[]) =>
          items.map((item) => item.notificationAdded.title)
        expect(titles(await carolsFeed.until(3))).toEqual([
          `Order #${carolsFirst.id} is paid`,
          `Order #${carolsFirst.id} was cancelled`,
          `Order #${carolsSecond.id} is paid`,
        ])
        expect(titles(await davesFeed.until(3))).toEqual([
          `Order #${davesOrder.id} is paid`,
          `Order #${davesOrder.id} has shipped`,
          `Order #${davesOrder.id} was delivered`,
        ])
        expect(titles(await adminsFeed.until(1))).toEqual([`Order #${adminsOrder.id} is paid`])

        // Each arrived as it is stored: the same notifications, oldest first.
        for (const [user, feed] of [
          [carol, carolsFeed],
          [dave, davesFeed],
        ] as [User, typeof carolsFeed][]) {
          const stored = (await restNotifications(user.accessToken)).map(asGraphQLNotification)
          expect(feed.items.map((item) => item.notificationAdded)).toEqual(stored.reverse())
        }
        expect(carolsFeed.items.map((item) => item.notificationAdded.kind)).toEqual([
          'order.paid',
          'order.cancelled',
          'order.paid',
        ])
      })

      it('fails UNAUTHENTICATED without a token, and delivers nothing', async () => {
        const refusal = refused(socket(), NOTIFICATION_ADDED)
        expect(await refusal.codes).toEqual(['UNAUTHENTICATED'])
        expect(server.events.activeSubscriptions()).toBe(0)
        expect(refusal.answers).toHaveLength(1)
      })
    })
  },
)

/**
 * Deployments may share one Redis, each under a REDIS_KEY_PREFIX of its own (README). Ids
 * repeat from one deployment's database to the other's, so what one deployment tells its
 * user or order N must not reach the other deployment's user or order N.
 */
if (redisUrl) {
  const sharedRedis = redisUrl
  describe.each(backends)('two deployments sharing one Redis on $name', (backend) => {
    let deployments: TestServer[] = []

    beforeAll(async () => {
      deployments = [
        await startServer(backend, { REDIS_URL: sharedRedis }),
        await startServer(backend, { REDIS_URL: sharedRedis }),
      ]
    })
    afterAll(async () => {
      for (const deployment of deployments) await deployment.close()
    })

    /** The same steps on each deployment's fresh database: a user, a product, an order. */
    async function setUp(deployment: TestServer) {
      const admin = (await login(deployment.api, ADMIN)).accessToken
      const user = await newUser(deployment.api)
      const product = await deployment.api.post('/products', {
        json: { name: 'Shared lamp', price: 5, category: 'deployments', stock: 10 },
        token: admin,
      })
      expect(product.status, product.text).toBe(201)
      const order = await deployment.api.post('/orders', {
        json: { items: [{ productId: product.body.data.id, quantity: 1 }] },
        token: user.accessToken,
      })
      expect(order.status, order.text).toBe(201)
      const move = async (status: string) => {
        const response = await deployment.api.patch(`/orders/${order.body.data.id}`, {
          json: { status },
          token: admin,
        })
        expect(response.status, response.text).toBe(200)
      }
      return { user, order: order.body.data as RestOrder, move }
    }

    it("keeps each deployment's order updates and notifications to its own subscribers", async () => {
      const [ours, theirs] = deployments as [TestServer, TestServer]
      expect(ours.testDatabase.redisKeyPrefix).not.toBe(theirs.testDatabase.redisKeyPrefix)
      const mine = await setUp(ours)
      const other = await setUp(theirs)
      // The point of the test: the same user id and order id on both.
      expect(other.user.user.id).toBe(mine.user.user.id)
      expect(other.order.id).toBe(mine.order.id)

      const client = wsClient(ours.baseUrl, { authToken: mine.user.accessToken })
      try {
        const notifications = collect(client, NOTIFICATION_ADDED)
        const updates = collect(client, ORDER_UPDATED, { orderId: String(mine.order.id) })
        await subscriptionsActive(ours.events, 2)
        await updates.until(1)

        // The other deployment's user and order of the same ids change first, then ours.
        await other.move('CANCELLED')
        await mine.move('PAID')

        const [stored] = (await ours.api.get('/notifications', { token: mine.user.accessToken }))
          .body.data as RestNotification[]
        expect(stored?.kind).toBe('order.paid')
        // Each feed's first event must be our own change: a leaked one would come first.
        expect({
          updates: (await updates.until(2)).slice(1),
          notifications: await notifications.until(1),
        }).toEqual({
          updates: [
            {
              orderUpdated: {
                ...asGraphQLOrder(mine.order),
                status: 'PAID',
                updatedAt: expect.any(String),
              },
            },
          ],
          notifications: [{ notificationAdded: asGraphQLNotification(stored as RestNotification) }],
        })
      } finally {
        await client.dispose()
      }
    })
  })
}
