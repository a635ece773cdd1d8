import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'

const lamp = { name: 'Guarded lamp', price: 19.99, category: 'preconditions', stock: 5 }
/** A tag of the form the service writes that no resource of the suite has. */
const STALE = '"AAAAAAAAAAAAAAAAAAAAAAAAAAA"'

/**
 * If-Match on the writes of products and orders: the tag a GET gives (in either
 * version) lets the write through, any other answers 412 and changes nothing, and the
 * order of the checks is authentication, then 404 and 410, then 412, then the write's
 * own rules.
 */
describe.each(backends)('If-Match on $name', (backend) => {
  let server: TestServer
  let admin: string
  const api = () => server.api
  const create = async (body: object = lamp) => {
    const response = await api().post('/products', { json: body, token: admin })
    expect(response.status, response.text).toBe(201)
    return response.body.data as { id: number }
  }
  const read = (path: string) => api().get(path, { token: admin })
  const tagOf = async (path: string) => (await read(path)).headers.get('etag') as string
  const withIfMatch = (ifMatch: string, json?: object, token = admin) => ({
    headers: { 'if-match': ifMatch },
    token,
    ...(json && { json }),
  })

  beforeAll(async () => {
    server = await startServer(backend)
    admin = (await login(server.api, ADMIN)).accessToken
  })
  afterAll(() => server?.close())

  const writes = [
    ['PATCH', { stock: 7 }],
    ['PUT', { ...lamp, name: 'Replaced lamp' }],
    ['DELETE', undefined],
  ] as const

  describe.each(writes)('%s /products/{id}', (method, json) => {
    const write = (id: number, ifMatch: string, token = admin) =>
      api().request(method, `/products/${id}`, withIfMatch(ifMatch, json, token))

    it.each([
      ['its current ETag', (tag: string) => tag],
      ['a list that holds it', (tag: string) => `${STALE}, ${tag}`],
      ['*', () => '*'],
    ])('goes through with %s', async (_, ifMatch) => {
      const { id } = await create()
      const response = await write(id, ifMatch(await tagOf(`/products/${id}`)))
      expect(response.status, response.text).toBe(method === 'DELETE' ? 204 : 200)
    })

    it.each([
      ['an ETag it no longer has', () => STALE, /has changed/],
      ['its current ETag made weak', (tag: string) => `W/${tag}`, /weak/],
    ])('answers 412 to %s and changes nothing', async (_, ifMatch, message) => {
      const { id } = await create()
      const path = `/products/${id}`
      const before = await read(path)
      const response = await write(id, ifMatch(before.headers.get('etag') as string))
      expect(response.status).toBe(412)
      expect(response.body.error).toEqual({
        code: 'PRECONDITION_FAILED',
        message: expect.stringMatching(message),
      })
      const after = await read(path)
      expect(after.body).toEqual(before.body)
      expect(after.headers.get('etag')).toBe(before.headers.get('etag'))
    })

    it.each(['abc', '"unclosed', '*, "a"', 'W/abc', '"a" "b"', '"a",', `"${'a'.repeat(1030)}"`])(
      'refuses If-Match: %s, which is no list of entity tags, with 400 and changes nothing',
      async (ifMatch) => {
        const { id } = await create()
        const before = await read(`/products/${id}`)
        const response = await write(id, ifMatch)
        expect(response.status).toBe(400)
        expect(response.body.error.code).toBe('VALIDATION_ERROR')
        expect(Object.keys(response.body.error.details)).toEqual(['if-match'])
        expect((await read(`/products/${id}`)).body).toEqual(before.body)
      },
    )

    it('authenticates first: 401 without a token, 403 for a user, whatever the tag', async () => {
      const { id } = await create()
      const user = await newUser(server.api)
      const anonymous = await api().request(method, `/products/${id}`, {
        headers: { 'if-match': STALE },
        ...(json && { json }),
      })
      expect(anonymous.status).toBe(401)
      expect((await write(id, STALE, user.accessToken)).status).toBe(403)
    })

    it('answers 404 and 410 before 412', async () => {
      expect((await write(2_147_483_600, STALE)).status).toBe(404)
      const { id } = await create()
      await api().delete(`/products/${id}`, { token: admin })
      const gone = await write(id, '*')
      expect(gone.status).toBe(410)
      expect(gone.body.error.code).toBe('GONE')
    })
  })

  describe.each(['PATCH', 'PUT'] as const)('the answer to %s', (method) => {
    const json = method === 'PATCH' ? { stock: 9 } : lamp

    it.each(['1', '2'])(
      'carries the ETag GET then gives, in v%s, which the next write may send',
      async (version) => {
        const { id } = await create()
        const path = `/api/v${version}/products/${id}`
        const first = await api().request(method, path, withIfMatch(await tagOf(path), json))
        expect(first.status, first.text).toBe(200)
        const tag = first.headers.get('etag')
        expect(tag).toMatch(/^"[\w-]+"$/)
        expect(await tagOf(`/api/v1/products/${id}`)).toBe(tag)
        expect(await tagOf(`/api/v2/products/${id}`)).toBe(tag)
        const second = await api().request(method, path, withIfMatch(tag as string, json))
        expect(second.status, second.text).toBe(200)
      },
    )
  })

  it('takes a tag from either version for a write in the other', async () => {
    const { id } = await create()
    const v2Tag = await tagOf(`/api/v2/products/${id}`)
    const v1Write = await api().patch(`/api/v1/products/${id}`, withIfMatch(v2Tag, { stock: 1 }))
    expect(v1Write.status).toBe(200)
    const v2Write = await api().patch(
      `/api/v2/products/${id}`,
      withIfMatch(v1Write.headers.get('etag') as string, { stock: 2 }),
    )
    expect(v2Write.status).toBe(200)
  })

  it('tags a product whose text JSON escapes, as GET does', async () => {
    const { id } = await create({ ...lamp, name: 'Quote " back\\slash \u2028 é 𝄞 <b>' })
    const response = await api().patch(
      `/products/${id}`,
      withIfMatch(await tagOf(`/products/${id}`), { stock: 1 }),
    )
    expect(response.status, response.text).toBe(200)
  })

  describe('PATCH /orders/{id}', () => {
    let buyer: Awaited<ReturnType<typeof newUser>>
    let productId: number
    beforeAll(async () => {
      buyer = await newUser(server.api)
      productId = (await create({ ...lamp, stock: 1000 })).id
    })
    const placed = async () => {
      const response = await api().post('/orders', {
        json: { items: [{ productId, quantity: 1 }] },
        token: buyer.accessToken,
      })
      expect(response.status, response.text).toBe(201)
      return `/orders/${response.body.data.id}`
    }
    const notificationsOfBuyer = async () =>
      (await api().get('/notifications?limit=1', { token: buyer.accessToken })).body.pagination
        .total

    it('moves the order with its current ETag, and tags the answer as GET does', async () => {
      const path = await placed()
      const response = await api().patch(path, withIfMatch(await tagOf(path), { status: 'PAID' }))
      expect(response.status, response.text).toBe(200)
      expect(response.body.data.status).toBe('PAID')
      expect(response.headers.get('etag')).toBe(await tagOf(path))
    })

    it('answers 412 to a stale ETag: no change, no notification', async () => {
      const path = await placed()
      const before = await read(path)
      const told = await notificationsOfBuyer()
      const response = await api().patch(path, withIfMatch(STALE, { status: 'PAID' }))
      expect(response.status).toBe(412)
      expect(response.body.error.code).toBe('PRECONDITION_FAILED')
      expect((await read(path)).body).toEqual(before.body)
      expect(await notificationsOfBuyer()).toBe(told)
    })

    it("answers 412 before the status graph's 409, and 409 once the tag is current", async () => {
      const path = await placed()
      const offTheGraph = { status: 'DELIVERED' }
      expect((await api().patch(path, withIfMatch(STALE, offTheGraph))).status).toBe(412)
      const current = await api().patch(path, withIfMatch(await tagOf(path), offTheGraph))
      expect(current.status).toBe(409)
      expect(current.body.error.code).toBe('CONFLICT')
    })

    it('answers 404 before 412, and 403 to a user whatever the tag', async () => {
      const path = await placed()
      expect(
        (await api().patch('/orders/2147483600', withIfMatch(STALE, { status: 'PAID' }))).status,
      ).toBe(404)
      const user = await api().patch(
        path,
        withIfMatch(STALE, { status: 'PAID' }, buyer.accessToken),
      )
      expect(user.status).toBe(403)
    })
  })
})
