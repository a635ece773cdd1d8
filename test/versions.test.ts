import { createHmac, randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { Secret, TOTP } from 'otpauth'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { openapiV2Path } from '../src/paths.js'
import { emailedToken, LINKS } from './helpers/account-emails.js'
import { type Api, type ApiResponse, createApi, type RequestOptions } from './helpers/api.js'
import { backends } from './helpers/backends.js'
import { findOperation, METHODS, specification } from './helpers/contract.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'

const WEBHOOK_SECRET = 'a-webhook-secret-for-version-tests'
const METRICS_TOKEN = 'a-metrics-token-for-version-tests'
/** A day: its 00:00 UTC. */
const V1_SUNSET = '2027-06-30'
const VENDOR_V2 = 'application/vnd.catalog.v2+json'

/** A client of one version that notes every operation it saw succeed in that version. */
function versionedClient(api: Api, version: string, succeeded: Set<string>): Api {
  const request = async (method: string, path: string, options?: RequestOptions) => {
    const response = await api.request(method, path, options)
    expect(response.headers.get('api-version')).toBe(version)
    if (response.status < 300) {
      const url = `http://any${path.startsWith('/api/') ? path : `/api/v${version}${path}`}`
      const found = findOperation(method, url, version)
      if (found) succeeded.add(found.operation.operationId)
    }
    return response
  }
  return {
    request,
    get: (path, options) => request('GET', path, options),
    post: (path, options) => request('POST', path, options),
    put: (path, options) => request('PUT', path, options),
    patch: (path, options) => request('PATCH', path, options),
    delete: (path, options) => request('DELETE', path, options),
  } as Api
}

function signedPayment(orderId: number) {
  const body = JSON.stringify({
    id: `evt_${randomUUID()}`,
    type: 'payment.succeeded',
    data: { orderId },
  })
  const timestamp = Math.floor(Date.now() / 1000)
  const signature = createHmac('sha256', WEBHOOK_SECRET)
    .update(`${timestamp}.${body}`)
    .digest('hex')
  return {
    raw: body,
    headers: {
      'content-type': 'application/json',
      'x-webhook-timestamp': String(timestamp),
      'x-webhook-id': randomUUID(),
      'x-webhook-signature': `sha256=${signature}`,
    },
  }
}

const everyOperation = Object.values(specification.paths).flatMap((path) =>
  METHODS.flatMap((method) => (path[method] ? [path[method].operationId] : [])),
)

describe.each(backends)('API versions on $name', (backend) => {
  let server: TestServer
  let admin: string
  const api = () => server.api
  const product = async (name: string) => {
    const created = await api().post('/products', {
      json: { name, price: 12.5, category: 'versions', stock: 9 },
      token: admin,
    })
    expect(created.status, created.text).toBe(201)
    return created.body.data as { id: number }
  }

  beforeAll(async () => {
    server = await startServer(backend, {
      WEBHOOK_SECRET,
      METRICS_TOKEN,
      V1_SUNSET,
      // Webhook endpoints on the loopback, which no delivery is sent to.
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_CONCURRENCY: '0',
    })
    admin = (await login(server.api, ADMIN)).accessToken
  })
  afterAll(() => server?.close())

  describe('every operation answers in both versions, each as its description says', () => {
    // Each response is checked against the description of the version that answered it
    // (test/helpers/api.ts): openapi.yaml for v1, generated/openapi.v2.yaml for v2.
    for (const version of ['1', '2']) {
      it(`walks every operation of openapi.yaml under /api/v${version}`, async () => {
        const succeeded = new Set<string>()
        const client = versionedClient(
          createApi(`${server.baseUrl}/api/v${version}`),
          version,
          succeeded,
        )
        await walkEveryOperation(client, admin)
        expect([...everyOperation].filter((id) => !succeeded.has(id))).toEqual([])
      })
    }
  })

  describe('choosing the version', () => {
    it('leaves what is not a REST operation unversioned, whatever version it names', async () => {
      // Plain fetch: the API helper holds every answer to openapi.yaml, which has no /graphql.
      const docs = await fetch(`${server.baseUrl}/docs/json`, { headers: { 'api-version': '3' } })
      const graphql = await fetch(`${server.baseUrl}/graphql`, {
        method: 'POST',
        body: JSON.stringify({ query: '{ __typename }' }),
        headers: { 'api-version': '3', 'content-type': 'application/json' },
      })
      for (const response of [docs, graphql]) {
        expect(response.status).toBe(200)
        expect(response.headers.get('api-version')).toBeNull()
        expect(response.headers.get('vary') ?? '').not.toContain('api-version')
      }
    })

    it('answers v1 unprefixed by default, and says so', async () => {
      const { id } = await product('Default lamp')
      const response = await api().get(`/products/${id}`)
      expect(response.headers.get('api-version')).toBe('1')
      expect(response.headers.get('vary')).toBe('Accept, api-version')
      expect(Object.keys(response.body)).toEqual(['data'])
    })

    it('takes the version from the path, the api-version header, or the vendor media type', async () => {
      const { id } = await product('Three ways lamp')
      const ways: [string, RequestOptions][] = [
        [`/api/v2/products/${id}`, {}],
        [`/products/${id}`, { headers: { 'api-version': '2' } }],
        [`/products/${id}`, { headers: { accept: VENDOR_V2 } }],
        [`/products/${id}`, { headers: { accept: `${VENDOR_V2};q=0.9, application/json;q=0.5` } }],
      ]
      for (const [path, options] of ways) {
        const response = await api().get(path, options)
        expect(response.status).toBe(200)
        expect(response.headers.get('api-version')).toBe('2')
        expect(response.body.data.id).toBe(id)
        expect(Object.keys(response.body.meta)).toEqual(['requestId', 'timestamp'])
      }
      const v1 = await api().get(`/api/v1/products/${id}`, { headers: { 'api-version': '1' } })
      expect(v1.headers.get('api-version')).toBe('1')
      expect(v1.body.meta).toBeUndefined()
    })

    it('accepts a body sent as the vendor media type, and validates it as JSON', async () => {
      const headers = { 'content-type': VENDOR_V2 }
      const created = await api().post('/products', {
        raw: JSON.stringify({ name: 'Vendor lamp', price: 3, category: 'versions' }),
        headers,
        token: admin,
      })
      expect(created.status, created.text).toBe(201)
      expect(created.headers.get('api-version')).toBe('2')
      expect(created.body.meta.requestId).toBe(created.headers.get('x-request-id'))
      const before = await api().get('/products?category=versions&limit=1')
      const invalid = await api().post('/products', {
        raw: JSON.stringify({ name: 'Vendor lamp', price: -3, category: 'versions' }),
        headers,
        token: admin,
      })
      expect(invalid.status).toBe(400)
      expect(invalid.body.error.code).toBe('VALIDATION_ERROR')
      const after = await api().get('/products?category=versions&limit=1')
      expect(after.body.pagination.total).toBe(before.body.pagination.total)
    })

    it.each([
      ['the path and the header', '/api/v1/products', { 'api-version': '2' }],
      ['the path and Accept', '/api/v2/products', { accept: 'application/vnd.catalog.v1+json' }],
      ['the header and Accept', '/products', { 'api-version': '1', accept: VENDOR_V2 }],
      ['the path and the body', '/api/v1/products', { 'content-type': VENDOR_V2 }],
    ])(
      'refuses %s naming different versions with 400, creating nothing',
      async (_, path, headers) => {
        const before = await api().get('/products?limit=1')
        const response = await api().post(path, {
          raw: JSON.stringify({ name: 'Torn lamp', price: 3, category: 'versions' }),
          headers: { 'content-type': 'application/json', ...headers },
          token: admin,
        })
        expect(response.status).toBe(400)
        expect(response.body.error.code).toBe('BAD_REQUEST')
        expect(response.body.error.message).toMatch(/two API versions/)
        expect((await api().get('/products?limit=1')).body.pagination.total).toBe(
          before.body.pagination.total,
        )
      },
    )

    it.each([
      ['/api/v3/products', {}],
      ['/api/v0/products', {}],
      ['/api/vlatest/products', {}],
      ['/products', { 'api-version': '3' }],
      ['/products', { 'api-version': 'two' }],
      ['/products', { 'content-type': 'application/vnd.catalog.v3+json' }],
    ])('refuses an unknown version (%s %o) with 400', async (path, headers) => {
      const response = await api().get(path, { headers })
      expect(response.status).toBe(400)
      expect(response.body.error.message).toMatch(/Unknown API version/)
    })

    it('answers 406 to an Accept that names only versions it does not speak', async () => {
      const refused = await api().get('/products', {
        headers: { accept: 'application/vnd.catalog.v3+json' },
      })
      expect(refused.status).toBe(406)
      expect(refused.body.error.message).toMatch(/application\/vnd\.catalog\.v2\+json/)
      const withJson = await api().get('/products', {
        headers: { accept: 'application/vnd.catalog.v3+json, application/json;q=0.1' },
      })
      expect(withJson.status).toBe(200)
      expect(withJson.headers.get('api-version')).toBe('1')
    })

    it('keeps a version prefix off everything but the REST API', async () => {
      for (const path of ['/api/v1/graphql', '/api/v2/docs', '/api/v1', '/api/v2/nothing']) {
        const response = await api().get(path)
        expect(response.status, path).toBe(404)
        expect(response.body.error.code).toBe('NOT_FOUND')
      }
    })
  })

  describe("v2's envelope", () => {
    it('puts the request id and a timestamp in meta, and a list its pagination', async () => {
      await product('Meta lamp')
      const requestId = randomUUID()
      const started = Date.now()
      const response = await api().get('/api/v2/products?limit=1', {
        headers: { 'x-request-id': requestId },
      })
      expect(response.body.meta.requestId).toBe(requestId)
      expect(response.headers.get('x-request-id')).toBe(requestId)
      const timestamp = Date.parse(response.body.meta.timestamp)
      expect(timestamp).toBeGreaterThanOrEqual(started - 1000)
      expect(timestamp).toBeLessThanOrEqual(Date.now() + 1000)
      expect(response.body.pagination).toBeUndefined()
      expect(response.body.meta.pagination).toMatchObject({ page: 1, limit: 1 })
      const v1 = await api().get('/products?limit=1')
      expect(response.body.meta.pagination).toEqual(v1.body.pagination)
      expect(response.body.data).toEqual(v1.body.data)
    })

    it('keeps the error envelope of v1, and says the version that answered', async () => {
      const response = await api().get('/api/v2/products/999999')
      expect(response.status).toBe(404)
      expect(response.headers.get('api-version')).toBe('2')
      expect(Object.keys(response.body)).toEqual(['error'])
    })

    it('gives a location under the prefix the request used', async () => {
      for (const prefix of ['/api/v1', '/api/v2', '']) {
        const created = await api().post(`${prefix}/products`, {
          json: { name: `Located lamp ${prefix}`, price: 2, category: 'versions' },
          token: admin,
        })
        const { id } = created.body.data
        expect(created.headers.get('location')).toBe(`${prefix}/products/${id}`)
        expect((await api().get(created.headers.get('location') as string)).status).toBe(200)
      }
    })
  })

  describe('ETags', () => {
    it('are stable across requests and equal in both versions, so 304 works across them', async () => {
      const { id } = await product('Tagged lamp')
      const v2 = await api().get(`/api/v2/products/${id}`)
      const again = await api().get(`/api/v2/products/${id}`)
      const v1 = await api().get(`/api/v1/products/${id}`)
      const etag = v2.headers.get('etag') as string
      expect(etag).toMatch(/^"/)
      expect(again.headers.get('etag')).toBe(etag)
      expect(again.body.meta.requestId).not.toBe(v2.body.meta.requestId)
      expect(v1.headers.get('etag')).toBe(etag)
      const cached = await api().get(`/api/v2/products/${id}`, {
        headers: { 'if-none-match': v1.headers.get('etag') as string },
      })
      expect(cached.status).toBe(304)
      expect(cached.text).toBe('')
      const list2 = await api().get('/api/v2/products?category=versions')
      const list1 = await api().get('/products?category=versions')
      expect(list2.headers.get('etag')).toBe(list1.headers.get('etag'))
    })

    it('change in both versions when the resource changes', async () => {
      const { id } = await product('Changing lamp')
      const before = (await api().get(`/api/v2/products/${id}`)).headers.get('etag')
      await api().patch(`/products/${id}`, { json: { stock: 1 }, token: admin })
      const after = await api().get(`/api/v2/products/${id}`, {
        headers: { 'if-none-match': before as string, 'cache-control': 'no-cache' },
      })
      expect(after.status).toBe(200)
      expect(after.body.data.stock).toBe(1)
      expect(after.headers.get('etag')).not.toBe(before)
    })
  })

  describe('deprecation of v1', () => {
    it('marks v1 answers with Deprecation, Sunset and a Link to the migration notes', async () => {
      const response = await api().get('/products?limit=1')
      expect(response.headers.get('deprecation')).toBe(
        `@${Date.parse('2026-11-22T00:00:00Z') / 1000}`,
      )
      expect(response.headers.get('sunset')).toBe('Wed, 30 Jun 2027 00:00:00 GMT')
      expect(response.headers.get('link')).toBe(
        '</docs/v2>; rel="deprecation"; type="text/html", </docs/v2>; rel="sunset"; type="text/html"',
      )
      const v2 = await api().get('/api/v2/products?limit=1')
      for (const header of ['deprecation', 'sunset', 'link']) {
        expect(v2.headers.get(header)).toBeNull()
      }
      expect((await api().get('/products/999999')).headers.get('sunset')).not.toBeNull()
    })

    it('counts the requests of each version in the metrics', async () => {
      const count = async (version: string) => {
        const metrics = await api().get('/metrics', { token: METRICS_TOKEN })
        const line = new RegExp(`^api_requests_total\\{version="${version}"\\} (\\d+)$`, 'm')
        return Number(line.exec(metrics.text)?.[1] ?? 0)
      }
      const [v1, v2] = [await count('1'), await count('2')]
      await api().get('/api/v2/products?limit=1')
      await api().get('/products?limit=1', { headers: { 'api-version': '2' } })
      await api().get('/products?limit=1')
      // Each scrape is a v1 request too, counted before it answers.
      expect(await count('2')).toBe(v2 + 2)
      expect(await count('1')).toBe(v1 + 4)
    })
  })

  it('serves the description of each version', async () => {
    // Not operations of the API: read as a client team's generator reads them.
    const v2 = await fetch(`${server.baseUrl}/docs/v2/json`)
    expect(v2.status).toBe(200)
    const description = (await v2.json()) as {
      info: { version: string }
      servers: { url: string }[]
    }
    expect(description).toEqual(parse(readFileSync(openapiV2Path, 'utf8')))
    expect(description.info.version).toMatch(/^2\./)
    expect(description.servers[0]?.url).toBe('/api/v2')
    const v1 = (await (await fetch(`${server.baseUrl}/docs/json`)).json()) as {
      info: { version: string }
    }
    expect(v1.info.version).toMatch(/^1\./)
  })

  /**
   * One success of every operation, in the client's version: sign-up, email verification,
   * login, password change, logout (one session and all), password reset, the
   * catalog, posts, an order paid by a signed webhook, notifications, webhook endpoints
   * and their deliveries, and the probes.
   */
  async function walkEveryOperation(client: Api, adminToken: string) {
    const ok = (response: ApiResponse, status = 200) => {
      expect(response.status, response.text).toBe(status)
      return response.body.data
    }
    const hooks = `/webhook-endpoints`
    const hook = ok(
      await client.post(hooks, {
        json: { url: 'http://127.0.0.1:9/walk', events: ['product.created'] },
        token: adminToken,
      }),
      201,
    )
    const { accessToken, user } = await newUser(client)
    const email = `walker-${randomUUID()}@example.com`
    const signedUp = ok(
      await client.post('/users', {
        json: { name: 'Walker', email, password: 'walker-password' },
      }),
      201,
    )
    const pair = ok(
      await client.post('/auth/login', { json: { email, password: 'walker-password' } }),
    )
    const refreshed = ok(
      await client.post('/auth/refresh', { json: { refreshToken: pair.refreshToken } }),
    )
    const db = server.testDatabase.database.db
    const verification = await emailedToken(db, email, LINKS.emailVerification)
    ok(await client.post('/auth/verify-email', { json: { token: verification } }), 204)
    const changed = ok(
      await client.post('/auth/password', {
        json: { currentPassword: 'walker-password', newPassword: 'walker-password-2' },
        token: refreshed.accessToken,
      }),
    )
    const logout = { json: { refreshToken: changed.refreshToken }, token: changed.accessToken }
    ok(await client.post('/auth/logout', logout), 204)
    // Two-factor on, a login with a recovery code (the enabling code is spent), off again.
    const credentials = { email, password: 'walker-password-2' }
    const session = ok(await client.post('/auth/login', { json: credentials }))
    const { secret } = ok(await client.post('/auth/2fa/setup', { token: session.accessToken }))
    const code = new TOTP({ secret: Secret.fromBase32(secret) }).generate()
    const { recoveryCodes } = ok(
      await client.post('/auth/2fa/enable', { json: { code }, token: session.accessToken }),
    )
    const withOtp = { json: { ...credentials, otp: recoveryCodes[0] } }
    const verified = ok(await client.post('/auth/login', withOtp))
    const off = { json: { code: recoveryCodes[1] }, token: verified.accessToken }
    ok(await client.post('/auth/2fa/disable', off), 204)
    ok(await client.post('/auth/logout-all', { token: verified.accessToken }), 204)
    ok(await client.post('/auth/password-reset', { json: { email } }), 202)
    const reset = await emailedToken(db, email, LINKS.passwordReset)
    ok(
      await client.post('/auth/password-reset/confirm', {
        json: { token: reset, newPassword: 'walker-password-3' },
      }),
      204,
    )
    const latest = ok(
      await client.post('/auth/login', { json: { email, password: 'walker-password-3' } }),
    )
    ok(await client.get(`/users/${signedUp.id}`))
    ok(await client.get('/users?search=walker', { token: adminToken }))
    ok(
      await client.patch(`/users/${signedUp.id}`, { json: { age: 30 }, token: latest.accessToken }),
    )
    const item = ok(
      await client.post('/products', {
        json: { name: 'Walked lamp', price: 4, category: 'walk', stock: 5 },
        token: adminToken,
      }),
      201,
    )
    ok(await client.get('/products?category=walk'))
    const read = await client.get(`/products/${item.id}`)
    ok(read)
    const ifMatch = { 'if-match': read.headers.get('etag') as string }
    const changes = { json: { stock: 6 }, token: adminToken, headers: ifMatch }
    ok(await client.patch(`/products/${item.id}`, changes))
    const replacement = { name: 'Walked lamp', price: 5, category: 'walk', stock: 6 }
    ok(await client.put(`/products/${item.id}`, { json: replacement, token: adminToken }))
    const post = ok(
      await client.post(`/users/${user.id}/posts`, {
        json: { title: 'Walking' },
        token: accessToken,
      }),
      201,
    )
    ok(await client.get(`/users/${user.id}/posts`))
    ok(await client.get(`/users/${user.id}/posts/${post.id}`))
    ok(await client.delete(`/users/${user.id}/posts/${post.id}`, { token: accessToken }), 204)
    const order = ok(
      await client.post('/orders', {
        json: { items: [{ productId: item.id, quantity: 1 }] },
        token: accessToken,
      }),
      201,
    )
    ok(await client.get('/orders', { token: accessToken }))
    ok(await client.get(`/orders/${order.id}`, { token: accessToken }))
    ok(await client.post('/webhooks/payments', signedPayment(order.id)))
    ok(
      await client.patch(`/orders/${order.id}`, {
        json: { status: 'SHIPPED' },
        token: adminToken,
      }),
    )
    const second = ok(
      await client.post('/orders', {
        json: { items: [{ productId: item.id, quantity: 1 }] },
        token: accessToken,
      }),
      201,
    )
    ok(await client.post(`/orders/${second.id}/cancel`, { token: accessToken }))
    const notifications = ok(await client.get('/notifications', { token: accessToken }))
    ok(await client.post(`/notifications/${notifications[0].id}/read`, { token: accessToken }))
    ok(await client.get('/reports/generate?type=orders', { token: adminToken }))
    const queued = ok(
      await client.post('/emails/send', {
        json: { to: email, subject: 'Walked', text: 'Every operation, once.' },
        token: adminToken,
      }),
      202,
    )
    ok(await client.get(`/emails/${queued.id}`, { token: adminToken }))
    const boundary = 'walk-boundary'
    const file = ok(
      await client.post('/upload', {
        raw: `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="walk.txt"\r\nContent-Type: text/plain\r\n\r\nwalked\r\n--${boundary}--\r\n`,
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
        token: accessToken,
      }),
      201,
    )
    const downloaded = await client.get(`/uploads/${file.id}`, { token: accessToken })
    expect([downloaded.status, downloaded.text]).toEqual([200, 'walked'])
    ok(await client.get('/uploads', { token: accessToken }))
    ok(await client.get('/uploads/usage', { token: accessToken }))
    ok(await client.delete(`/uploads/${file.id}`, { token: accessToken }), 204)
    ok(await client.delete(`/products/${item.id}`, { token: adminToken }), 204)
    ok(await client.get(hooks, { token: adminToken }))
    ok(await client.get(`${hooks}/${hook.id}`, { token: adminToken }))
    ok(
      await client.patch(`${hooks}/${hook.id}`, {
        json: { description: 'walked' },
        token: adminToken,
      }),
    )
    // The product's event reaches the log once the outbox has handed it on.
    let deliveries: { id: number }[] = []
    await expect
      .poll(async () => {
        deliveries = ok(await client.get(`${hooks}/${hook.id}/deliveries`, { token: adminToken }))
        return deliveries.length
      })
      .toBe(1)
    const retry = `${hooks}/${hook.id}/deliveries/${deliveries[0]?.id}/retry`
    ok(await client.post(retry, { token: adminToken }), 202)
    ok(await client.delete(`${hooks}/${hook.id}`, { token: adminToken }), 204)
    ok(await client.delete(`/users/${signedUp.id}`, { token: adminToken }), 204)
    ok(await client.get('/health'))
    ok(await client.get('/ready'))
    expect((await client.get('/metrics', { token: METRICS_TOKEN })).status).toBe(200)
  }
})
