import { createHmac, randomUUID } from 'node:crypto'
import { Agent, request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'

const SECRET = 'a-webhook-secret-for-tests'

/** A delivery as a payment provider sends it, signed over the exact bytes of its body. */
function signed(
  body: string,
  { secret = SECRET, timestamp = Math.floor(Date.now() / 1000), id = randomUUID() } = {},
) {
  const signature = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')
  return {
    'content-type': 'application/json',
    'x-webhook-timestamp': String(timestamp),
    'x-webhook-id': id,
    'x-webhook-signature': `sha256=${signature}`,
  }
}

const paymentOf = (orderId: number) =>
  JSON.stringify({ id: `evt_${randomUUID()}`, type: 'payment.succeeded', data: { orderId } })

describe.each(backends)('payment webhooks on $name', (backend) => {
  let server: TestServer
  let admin: string
  let buyer: Awaited<ReturnType<typeof newUser>>
  const api = () => server.api
  const deliver = (body: string, headers: Record<string, string>) =>
    api().post('/webhooks/payments', { raw: body, headers })
  const statusOf = async (orderId: number) =>
    (await api().get(`/orders/${orderId}`, { token: admin })).body.data.status

  async function pendingOrder() {
    const product = await api().post('/products', {
      json: { name: 'Paid lamp', price: 3, category: 'webhooks', stock: 10 },
      token: admin,
    })
    const order = await api().post('/orders', {
      json: { items: [{ productId: product.body.data.id, quantity: 1 }] },
      token: buyer.accessToken,
    })
    expect(order.status, order.text).toBe(201)
    return order.body.data.id as number
  }

  beforeAll(async () => {
    server = await startServer(backend, { WEBHOOK_SECRET: SECRET })
    admin = (await login(server.api, ADMIN)).accessToken
    buyer = await newUser(server.api)
  })
  afterAll(() => server?.close())

  it('marks a PENDING order PAID, and notifies its owner', async () => {
    const orderId = await pendingOrder()
    const body = paymentOf(orderId)
    const headers = signed(body)
    const response = await deliver(body, headers)
    expect(response.status, response.text).toBe(200)
    expect(response.body).toEqual({
      data: { id: headers['x-webhook-id'], duplicate: false, applied: true },
    })
    expect(await statusOf(orderId)).toBe('PAID')
    const notices = await api().get('/notifications', { token: buyer.accessToken })
    expect(notices.body.data[0]).toMatchObject({ kind: 'order.paid', read: false })
  })

  it('applies a repeated delivery id once, and says it is a repeat', async () => {
    const orderId = await pendingOrder()
    const body = paymentOf(orderId)
    const headers = signed(body)
    expect((await deliver(body, headers)).body.data.duplicate).toBe(false)
    await api().post(`/orders/${orderId}/cancel`, { token: buyer.accessToken })
    const repeat = await deliver(body, signed(body, { id: headers['x-webhook-id'] }))
    expect(repeat.status).toBe(200)
    expect(repeat.body.data).toEqual({
      id: headers['x-webhook-id'],
      duplicate: true,
      applied: true,
    })
    // The repeat came after a cancel: applied again, it would find a CANCELLED order.
    expect(await statusOf(orderId)).toBe('CANCELLED')
  })

  it('knows a captured delivery re-sent under a new header id by the signed body id', async () => {
    const orderId = await pendingOrder()
    const body = paymentOf(orderId)
    expect((await deliver(body, signed(body))).body.data.applied).toBe(true)
    await api().post(`/orders/${orderId}/cancel`, { token: buyer.accessToken })
    // Re-signed too: the header id is all a replayer can change, and the window is 5 minutes.
    const replayed = signed(body, { id: randomUUID() })
    const replay = await deliver(body, replayed)
    expect(replay.status).toBe(200)
    expect(replay.body.data).toEqual({
      id: replayed['x-webhook-id'],
      duplicate: true,
      applied: true,
    })
    expect(await statusOf(orderId)).toBe('CANCELLED')
  })

  it('applies one of many concurrent deliveries of one id', async () => {
    const orderId = await pendingOrder()
    const body = paymentOf(orderId)
    const headers = signed(body)
    const answers = await Promise.all(Array.from({ length: 6 }, () => deliver(body, headers)))
    expect(answers.map((answer) => answer.status)).toEqual(Array(6).fill(200))
    const firsts = answers.filter((answer) => !answer.body.data.duplicate)
    expect(firsts).toHaveLength(1)
    const notices = await api().get('/notifications?limit=100', { token: buyer.accessToken })
    const paid = notices.body.data.filter(
      (notice: { title: string }) => notice.title === `Order #${orderId} is paid`,
    )
    expect(paid).toHaveLength(1)
  })

  it('acknowledges, without applying, a payment of an order that is not PENDING or not there', async () => {
    const orderId = await pendingOrder()
    await api().post(`/orders/${orderId}/cancel`, { token: buyer.accessToken })
    for (const target of [orderId, 2_000_000_000]) {
      const body = paymentOf(target)
      const response = await deliver(body, signed(body))
      expect(response.status).toBe(200)
      expect(response.body.data).toMatchObject({ duplicate: false, applied: false })
    }
    expect(await statusOf(orderId)).toBe('CANCELLED')
  })

  it('acknowledges an event type it does not act on', async () => {
    const body = JSON.stringify({ id: 'evt_1', type: 'payment.refunded', data: { amount: 3 } })
    const response = await deliver(body, signed(body))
    expect(response.status).toBe(200)
    expect(response.body.data).toMatchObject({ duplicate: false, applied: false })
  })

  it('verifies the exact bytes: whitespace a re-serialization would drop still counts', async () => {
    const orderId = await pendingOrder()
    const body = `{ "id": "evt_spaced",\n  "type": "payment.succeeded", "data": { "orderId": ${orderId} } }`
    expect((await deliver(body, signed(body))).body.data.applied).toBe(true)
  })

  describe('refuses with 401, changing nothing', () => {
    const now = () => Math.floor(Date.now() / 1000)
    const cases: [string, (body: string) => Record<string, string>][] = [
      ['without a signature', (body) => withoutHeader(signed(body), 'x-webhook-signature')],
      ['without a timestamp', (body) => withoutHeader(signed(body), 'x-webhook-timestamp')],
      ['signed with another secret', (body) => signed(body, { secret: 'not-the-shared-secret' })],
      [
        'signed over other bytes',
        (body) => ({ ...signed(`${body} `), 'x-webhook-id': randomUUID() }),
      ],
      [
        'whose signature is not sha256=<hex>',
        (body) => ({ ...signed(body), 'x-webhook-signature': 'md5=abc' }),
      ],
      ['signed 6 minutes ago', (body) => signed(body, { timestamp: now() - 360 })],
      ['signed 6 minutes ahead', (body) => signed(body, { timestamp: now() + 360 })],
      [
        'whose timestamp was changed after signing',
        (body) => ({ ...signed(body), 'x-webhook-timestamp': String(now() - 1) }),
      ],
    ]

    it.each(cases)('a delivery %s', async (_, headersFor) => {
      const orderId = await pendingOrder()
      const body = paymentOf(orderId)
      const response = await deliver(body, headersFor(body))
      expect(response.status, response.text).toBe(401)
      expect(response.body.error.code).toBe('UNAUTHENTICATED')
      expect(await statusOf(orderId)).toBe('PENDING')
    })

    it('an unsigned delivery, before saying what is wrong with its body', async () => {
      const response = await deliver('{"type": 5}', { 'content-type': 'application/json' })
      expect(response.status).toBe(401)
    })
  })

  it('refuses a body past the limit with 413, and the connection still serves what follows', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    const send = (method: string, path: string, body?: string) =>
      new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
        const outgoing = request(`${server.baseUrl}${path}`, {
          method,
          agent,
          headers: body ? { 'content-type': 'application/json' } : {},
        })
        outgoing.on('response', (response) => {
          response.resume()
          response.on('end', () =>
            resolve({ status: response.statusCode ?? 0, connection: response.headers.connection }),
          )
        })
        outgoing.on('error', reject)
        outgoing.end(body)
      })
    try {
      const tooLarge = await send('POST', '/webhooks/payments', `"${'x'.repeat(2 * 1024 * 1024)}"`)
      expect(tooLarge).toEqual({ status: 413, connection: 'close' })
      expect((await send('GET', '/health')).status).toBe(200)
    } finally {
      agent.destroy()
    }
  })

  it('accepts a delivery signed 4 minutes ago', async () => {
    const orderId = await pendingOrder()
    const body = paymentOf(orderId)
    const timestamp = Math.floor(Date.now() / 1000) - 240
    expect((await deliver(body, signed(body, { timestamp }))).body.data.applied).toBe(true)
  })

  it('refuses a signed delivery without X-Webhook-Id with 400', async () => {
    const orderId = await pendingOrder()
    const body = paymentOf(orderId)
    const response = await deliver(body, withoutHeader(signed(body), 'x-webhook-id'))
    expect(response.status, response.text).toBe(400)
    expect(response.body.error.code).toBe('VALIDATION_ERROR')
    expect(await statusOf(orderId)).toBe('PENDING')
  })

  it('refuses a signed payment that names no order with 400', async () => {
    const body = JSON.stringify({ id: 'evt_2', type: 'payment.succeeded', data: {} })
    const response = await deliver(body, signed(body))
    expect(response.status, response.text).toBe(400)
    expect(response.body.error.details).toHaveProperty(['data.orderId'])
  })
})

describe.each(backends)('payment webhooks without WEBHOOK_SECRET on $name', (backend) => {
  let server: TestServer
  beforeAll(async () => {
    server = await startServer(backend)
  })
  afterAll(() => server?.close())

  it('accept nothing: 503, signed or not', async () => {
    const body = paymentOf(1)
    for (const headers of [signed(body), { 'content-type': 'application/json' }]) {
      const response = await server.api.post('/webhooks/payments', { raw: body, headers })
      expect(response.status).toBe(503)
      expect(response.body.error.code).toBe('UNAVAILABLE')
    }
  })
})

function withoutHeader(headers: Record<string, string>, name: string) {
  const { [name]: _, ...rest } = headers
  return rest
}
