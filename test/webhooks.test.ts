import { createHmac } from 'node:crypto'
import { count, eq, sql } from 'drizzle-orm'
import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { webhookEndpointDeliveries, webhookEndpoints } from '../src/db/schema.js'
import { backends } from './helpers/backends.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'
import { type WebhookReceiver, webhookReceiver } from './helpers/webhook-receiver.js'

const EVERY_EVENT = [
  'order.created',
  'order.updated',
  'product.created',
  'product.updated',
  'product.deleted',
]
let sequence = 0

describe.each(backends)('outgoing webhooks on $name', (backend) => {
  let server: TestServer
  let receiver: WebhookReceiver
  let admin: string
  const api = () => server.api
  const db = () => server.testDatabase.database.db

  /** A new endpoint at a path of its own on the receiver, with its secret. */
  async function endpoint(
    events = EVERY_EVENT,
    answers: Parameters<WebhookReceiver['answer']>[1][] = [],
  ) {
    const path = `/hooks/${++sequence}`
    if (answers.length > 0) receiver.answer(path, ...answers)
    const created = await api().post('/webhook-endpoints', {
      json: { url: receiver.url(path), events, description: `test ${sequence}` },
      token: admin,
    })
    expect(created.status, created.text).toBe(201)
    return { path, ...(created.body.data as { id: number; secret: string }) }
  }
  const product = async (name = `Webhooked ${++sequence}`) => {
    const created = await api().post('/products', {
      json: { name, price: 12.5, category: 'hooks', stock: 50 },
      token: admin,
    })
    expect(created.status, created.text).toBe(201)
    return created.body.data as { id: number }
  }
  const deliveriesOf = async (id: number) => {
    const listed = await api().get(`/webhook-endpoints/${id}/deliveries`, { token: admin })
    expect(listed.status, listed.text).toBe(200)
    return listed.body.data as Record<string, any>[]
  }
  /** The endpoint's first delivery, once its status is `status`. */
  async function settled(id: number, status: string) {
    let found: Record<string, any> | undefined
    await expect
      .poll(
        async () => {
          found = (await deliveriesOf(id)).at(-1)
          return found?.status
        },
        { timeout: 20_000, interval: 50 },
      )
      .toBe(status)
    return found as Record<string, any>
  }

  beforeAll(async () => {
    receiver = await webhookReceiver()
    server = await startServer(backend, {
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s',
    })
    admin = (await login(server.api, ADMIN)).accessToken
  })
  afterAll(async () => {
    await server?.close()
    await receiver?.close()
  })

  it('shows a new endpoint its whsec_ secret once, and keeps the secret sealed', async () => {
    const created = await api().post('/webhook-endpoints', {
      json: { url: receiver.url('/once'), events: ['order.created', 'order.created'] },
      token: admin,
    })
    expect(created.status, created.text).toBe(201)
    const { id, secret } = created.body.data
    expect(created.body.data).toMatchObject({
      url: receiver.url('/once'),
      events: ['order.created'],
      description: null,
      enabled: true,
    })
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32)
    expect(created.headers.get('location')).toBe(`/webhook-endpoints/${id}`)
    expect(created.headers.get('cache-control')).toBe('no-store')
    const read = await api().get(`/webhook-endpoints/${id}`, { token: admin })
    expect(read.status).toBe(200)
    expect(read.body.data).not.toHaveProperty('secret')
    expect(read.headers.get('etag')).toMatch(/^"/)
    const listed = await api().get('/webhook-endpoints?limit=100', { token: admin })
    expect(listed.body.data.map((each: { id: number }) => each.id)).toContain(id)
    expect(listed.text).not.toContain(secret.slice(6))
    const [row] = await db().select().from(webhookEndpoints).where(eq(webhookEndpoints.id, id))
    expect(row?.sealedSecret).toMatch(/^v1\./)
    expect(row?.sealedSecret).not.toContain(secret.slice(6))
  })

  it('signs each delivery as Standard Webhooks says, verified by its reference library', async () => {
    const hook = await endpoint(['product.created'])
    const { id: productId } = await product('Signed lamp')
    const delivered = await settled(hook.id, 'succeeded')
    const [request, ...more] = receiver.receivedAt(hook.path)
    expect(more).toEqual([])
    const headers = request?.headers as Record<string, string>
    const body = request?.body as string
    // The reference library checks the signature and the timestamp's tolerance.
    const verified = new Webhook(hook.secret).verify(body, headers) as Record<string, any>
    const fromApi = (await api().get(`/products/${productId}`)).body.data
    expect(verified).toEqual({
      type: 'product.created',
      timestamp: expect.any(String),
      data: fromApi,
    })
    expect(new Date(verified.timestamp).toISOString()).toBe(verified.timestamp)
    // And by hand, as the spec words it.
    const key = Buffer.from(hook.secret.slice('whsec_'.length), 'base64')
    const signed = `${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`
    expect(headers['webhook-signature']).toBe(
      `v1,${createHmac('sha256', key).update(signed).digest('base64')}`,
    )
    expect(headers['webhook-timestamp']).toMatch(/^\d{10}$/)
    expect(headers['content-type']).toBe('application/json')
    expect(headers['webhook-id']).toBe(delivered.eventId)
    expect(delivered).toMatchObject({
      type: 'product.created',
      attempts: 1,
      lastStatusCode: 200,
      lastError: null,
      nextAttemptAt: null,
    })
    expect(() => new Webhook(hook.secret).verify(`${body} `, headers)).toThrow()
    console.info('a delivery, as received:', JSON.stringify({ headers, body }))
  })

  it('sends order and product events, each carrying the resource as it was then', async () => {
    const hook = await endpoint()
    const { id: productId } = await product('Evented chair')
    await api().patch(`/products/${productId}`, { json: { stock: 40 }, token: admin })
    const buyer = await newUser(api())
    const placed = await api().post('/orders', {
      json: { items: [{ productId, quantity: 2 }] },
      token: buyer.accessToken,
    })
    expect(placed.status, placed.text).toBe(201)
    const orderId = placed.body.data.id
    const paid = await api().patch(`/orders/${orderId}`, { json: { status: 'PAID' }, token: admin })
    expect(paid.status, paid.text).toBe(200)
    await api().delete(`/products/${productId}`, { token: admin })
    await expect.poll(() => receiver.receivedAt(hook.path).length, { timeout: 15_000 }).toBe(5)
    const bodies = receiver.receivedAt(hook.path).map((each) => JSON.parse(each.body))
    const ofType = (type: string) =>
      bodies.filter((each) => each.type === type).map((each) => each.data)
    expect(ofType('product.created')).toEqual([
      expect.objectContaining({ id: productId, stock: 50 }),
    ])
    // Each as committed: the update's stock, not the order's later take from it.
    expect(ofType('product.updated')).toEqual([
      expect.objectContaining({ id: productId, stock: 40 }),
    ])
    expect(ofType('order.created')).toEqual([{ ...placed.body.data, status: 'PENDING' }])
    expect(ofType('order.updated')).toEqual([paid.body.data])
    expect(ofType('product.deleted')).toEqual([
      expect.objectContaining({ id: productId, stock: 38 }),
    ])
    const ids = receiver.receivedAt(hook.path).map((each) => each.headers['webhook-id'])
    expect(new Set(ids).size).toBe(5)
  })

  it('sends only the types an endpoint asked for', async () => {
    const orders = await endpoint(['order.created'])
    const products = await endpoint(['product.created'])
    await product()
    await expect.poll(() => receiver.receivedAt(products.path).length, { timeout: 15_000 }).toBe(1)
    expect(await deliveriesOf(orders.id)).toEqual([])
  })

  it('retries a receiver that fails twice on the schedule, under one webhook-id', async () => {
    const hook = await endpoint(['product.created'], [500, 503, 200])
    await product()
    const delivered = await settled(hook.id, 'succeeded')
    expect(delivered).toMatchObject({ attempts: 3, lastStatusCode: 200, lastError: null })
    const attempts = receiver.receivedAt(hook.path)
    expect(attempts).toHaveLength(3)
    expect(new Set(attempts.map((each) => each.headers['webhook-id']))).toEqual(
      new Set([delivered.eventId]),
    )
    expect(new Set(attempts.map((each) => each.body)).size).toBe(1)
    const gaps = attempts.slice(1).map((each, index) => each.at - (attempts[index]?.at ?? 0))
    console.info(
      'retry timeline (ms after the first attempt):',
      attempts.map((each) => each.at - (attempts[0]?.at ?? 0)),
      'gaps:',
      gaps,
    )
  })

  it('fails a delivery after its last attempt, then retries it by hand under the same webhook-id', async () => {
    const hook = await endpoint(['product.created'], [500])
    await product()
    const failed = await settled(hook.id, 'failed')
    // 1 + the schedule's three delays.
    expect(failed).toMatchObject({ attempts: 4, lastStatusCode: 500, nextAttemptAt: null })
    expect(failed.lastError).toMatch(/500/)
    expect(receiver.receivedAt(hook.path)).toHaveLength(4)

    receiver.answer(hook.path, 204)
    const retried = await api().post(
      `/webhook-endpoints/${hook.id}/deliveries/${failed.id}/retry`,
      { token: admin },
    )
    expect(retried.status, retried.text).toBe(202)
    expect(retried.body.data).toMatchObject({
      id: failed.id,
      status: 'pending',
      eventId: failed.eventId,
    })
    const again = await settled(hook.id, 'succeeded')
    expect(again).toMatchObject({ attempts: 5, lastStatusCode: 204 })
    const ids = receiver.receivedAt(hook.path).map((each) => each.headers['webhook-id'])
    expect(ids).toEqual(Array(5).fill(failed.eventId))
  })

  it('does not follow a redirect: a 3xx is a failed attempt', async () => {
    const hook = await endpoint(['product.created'], [{ redirectTo: '/elsewhere' }])
    await product()
    const failed = await settled(hook.id, 'failed')
    expect(failed).toMatchObject({ lastStatusCode: 302 })
    expect(failed.lastError).toMatch(/redirect/)
    expect(receiver.receivedAt('/elsewhere')).toEqual([])
  })

  it('disables an endpoint whose attempts have failed for 5 days in a row', async () => {
    const hook = await endpoint(['product.created'], [500, 500, 200])
    const { id: firstProduct } = await product()
    const failingSince = async () =>
      (await db().select().from(webhookEndpoints).where(eq(webhookEndpoints.id, hook.id)))[0]
        ?.failingSince
    await expect.poll(failingSince, { timeout: 15_000 }).toBeInstanceOf(Date)
    // The clock of the run of failures, moved back past 5 days.
    await db()
      .update(webhookEndpoints)
      .set({ failingSince: sql`now() - interval '5 days 1 minute'` })
      .where(eq(webhookEndpoints.id, hook.id))
    await expect
      .poll(
        async () =>
          (await api().get(`/webhook-endpoints/${hook.id}`, { token: admin })).body.data.enabled,
        { timeout: 15_000 },
      )
      .toBe(false)
    const [delivery] = await deliveriesOf(hook.id)
    expect(delivery).toMatchObject({ status: 'pending', attempts: 2 })
    // Disabled: nothing more goes out, and a manual retry is refused.
    const refused = await api().post(
      `/webhook-endpoints/${hook.id}/deliveries/${delivery?.id}/retry`,
      { token: admin },
    )
    expect(refused.status).toBe(409)
    expect(refused.body.error.code).toBe('CONFLICT')
    // An event while it is disabled is not its: once a witness has it, it has none.
    const witness = await endpoint(['product.created'])
    const { id: whileDisabled } = await product()
    await expect
      .poll(() => receiver.receivedAt(witness.path).map((each) => JSON.parse(each.body).data.id))
      .toEqual([whileDisabled])
    expect(await deliveriesOf(hook.id)).toHaveLength(1)
    // On again: the held delivery resumes, and succeeds.
    const enabled = await api().patch(`/webhook-endpoints/${hook.id}`, {
      json: { enabled: true },
      token: admin,
    })
    expect(enabled.body.data.enabled).toBe(true)
    expect(await settled(hook.id, 'succeeded')).toMatchObject({ attempts: 3 })
    const [after] = await db()
      .select()
      .from(webhookEndpoints)
      .where(eq(webhookEndpoints.id, hook.id))
    expect(after?.failingSince).toBeNull()
    expect(JSON.parse(receiver.receivedAt(hook.path)[2]?.body ?? '{}').data.id).toBe(firstProduct)
  })

  it('answers the API while receivers hang, with no more deliveries in flight than allowed', async () => {
    const bounded = await startServer(backend, {
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_CONCURRENCY: '2',
    })
    const path = `/hang/${++sequence}`
    receiver.answer(path, 'hang')
    try {
      const token = (await login(bounded.api, ADMIN)).accessToken
      const hook = await bounded.api.post('/webhook-endpoints', {
        json: { url: receiver.url(path), events: ['product.created'] },
        token,
      })
      expect(hook.status, hook.text).toBe(201)
      const create = (name: string) =>
        bounded.api.post('/products', { json: { name, price: 3, category: 'hang' }, token })
      for (let made = 0; made < 5; made += 1)
        expect((await create(`Hung ${made}`)).status).toBe(201)
      await expect.poll(() => receiver.hangingNow(), { timeout: 15_000 }).toBe(2)
      // While both slots hang, the API answers reads and writes, and no third is sent.
      for (let round = 0; round < 5; round += 1) {
        expect((await bounded.api.get('/products?category=hang')).status).toBe(200)
        expect((await create(`Meanwhile ${round}`)).status).toBe(201)
        expect((await bounded.api.get('/health')).status).toBe(200)
        expect(receiver.receivedAt(path).length).toBeLessThanOrEqual(2)
      }
      receiver.answer(path, 200)
      receiver.release()
      const listed = async () =>
        (
          await bounded.api.get(`/webhook-endpoints/${hook.body.data.id}/deliveries?limit=100`, {
            token,
          })
        ).body.data as { status: string }[]
      await expect
        .poll(async () => (await listed()).filter((each) => each.status === 'succeeded').length, {
          timeout: 20_000,
        })
        .toBe(10)
    } finally {
      receiver.release()
      await bounded.close()
    }
  })

  it('hands an attempt in flight back, uncounted, when the server stops', async () => {
    const stopping = await startServer(backend, { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' })
    const path = `/stop/${++sequence}`
    receiver.answer(path, 'hang')
    const token = (await login(stopping.api, ADMIN)).accessToken
    await stopping.api.post('/webhook-endpoints', {
      json: { url: receiver.url(path), events: ['product.created'] },
      token,
    })
    await stopping.api.post('/products', {
      json: { name: 'Stopped', price: 3, category: 'stop' },
      token,
    })
    await expect.poll(() => receiver.hangingNow(), { timeout: 15_000 }).toBe(1)
    const stoppedDb = stopping.testDatabase.database
    const { database } = stopping.testDatabase
    await stopping.app.close()
    const [delivery] = await database.db.select().from(webhookEndpointDeliveries)
    expect(delivery).toMatchObject({ status: 'pending', attempts: 0, leaseEndsAt: null })
    expect(stoppedDb).toBe(database)
    await stopping.close()
  })

  describe('refusals, with nothing stored', () => {
    const stored = async () => (await db().select({ n: count() }).from(webhookEndpoints))[0]?.n
    it.each([
      [{ url: 'http://user:secret@127.0.0.1/hooks', events: ['order.created'] }, 'url'],
      [{ url: 'http://user@127.0.0.1/hooks', events: ['order.created'] }, 'url'],
      [{ url: 'ftp://127.0.0.1/hooks', events: ['order.created'] }, 'url'],
      [{ url: 'javascript:alert(1)', events: ['order.created'] }, 'url'],
      [{ url: 'not a url', events: ['order.created'] }, 'url'],
      [{ url: 'http://127.0.0.1/hooks', events: ['order.deleted'] }, 'events'],
      [{ url: 'http://127.0.0.1/hooks', events: [] }, 'events'],
      [{ url: 'http://127.0.0.1/hooks' }, 'events'],
      [{ events: ['order.created'] }, 'url'],
      [
        { url: 'http://127.0.0.1/hooks', events: ['order.created'], secret: 'whsec_AAAA' },
        'secret',
      ],
      [{ url: 'http://127.0.0.1/hooks', events: ['order.created'], enabled: false }, 'enabled'],
    ])('refuses %o with 400 naming %s', async (body, field) => {
      const before = await stored()
      const response = await api().post('/webhook-endpoints', { json: body, token: admin })
      expect(response.status, response.text).toBe(400)
      expect(response.body.error.code).toBe('VALIDATION_ERROR')
      const named = Object.keys(response.body.error.details).map((each) => each.split('.')[0])
      expect(named).toContain(field)
      expect(await stored()).toBe(before)
    })

    it.each([
      [{ url: 'http://a:b@127.0.0.1/' }, 'url'],
      [{ url: 'file:///etc/passwd' }, 'url'],
      [{ events: ['payment.succeeded'] }, 'events'],
      [{ events: [] }, 'events'],
      [{ secret: 'whsec_AAAA' }, 'secret'],
    ])('refuses a change %o with 400 naming %s, changing nothing', async (body, field) => {
      const hook = await endpoint(['order.created'])
      const [before] = await db()
        .select()
        .from(webhookEndpoints)
        .where(eq(webhookEndpoints.id, hook.id))
      const response = await api().patch(`/webhook-endpoints/${hook.id}`, {
        json: body,
        token: admin,
      })
      expect(response.status, response.text).toBe(400)
      const named = Object.keys(response.body.error.details ?? {}).map((each) => each.split('.')[0])
      expect(named).toContain(field)
      const [after] = await db()
        .select()
        .from(webhookEndpoints)
        .where(eq(webhookEndpoints.id, hook.id))
      expect(after).toEqual(before)
    })

    it('answers 404 for an endpoint or delivery that does not exist', async () => {
      const hook = await endpoint(['order.created'])
      for (const path of ['/webhook-endpoints/999999', '/webhook-endpoints/999999/deliveries']) {
        expect((await api().get(path, { token: admin })).status).toBe(404)
      }
      const retry = await api().post(`/webhook-endpoints/${hook.id}/deliveries/999999/retry`, {
        token: admin,
      })
      expect(retry.status).toBe(404)
      expect((await api().delete('/webhook-endpoints/999999', { token: admin })).status).toBe(404)
    })
  })

  it('removes an endpoint with its delivery log', async () => {
    const hook = await endpoint(['product.created'])
    await product()
    await settled(hook.id, 'succeeded')
    expect((await api().delete(`/webhook-endpoints/${hook.id}`, { token: admin })).status).toBe(204)
    expect((await api().get(`/webhook-endpoints/${hook.id}`, { token: admin })).status).toBe(404)
    const left = await db()
      .select()
      .from(webhookEndpointDeliveries)
      .where(eq(webhookEndpointDeliveries.endpointId, hook.id))
    expect(left).toEqual([])
  })
})
