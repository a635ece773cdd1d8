import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { API_SECURITY_HEADERS } from '../src/platform/plugins/security-headers.js'
import { backends } from './helpers/backends.js'
import { ADMIN, login, startServer, type TestServer } from './helpers/server.js'

const lamp = { name: 'Desk lamp', price: 19.99, category: 'lighting' }

describe.each(backends)('REST conventions on $name', (backend) => {
  let server: TestServer
  let token: string
  let productPath: string

  beforeAll(async () => {
    server = await startServer(backend)
    token = (await login(server.api, ADMIN)).accessToken
    const created = await server.api.post('/products', { json: lamp, token })
    productPath = `/products/${created.body.data.id}`
  })
  afterAll(() => server?.close())

  describe('ETag', () => {
    it('tags a GET with a strong ETag that stays the same while the product does', async () => {
      const first = await server.api.get(productPath)
      const tag = first.headers.get('etag')
      expect(tag).toMatch(/^"[\w-]+"$/)
      expect((await server.api.get(productPath)).headers.get('etag')).toBe(tag)
    })

    it('answers 304 with no body to a current If-None-Match, also weak or in a list', async () => {
      const tag = (await server.api.get(productPath)).headers.get('etag') as string
      for (const header of [tag, `W/${tag}`, `"other", ${tag}`, '*']) {
        const response = await server.api.get(productPath, { headers: { 'if-none-match': header } })
        expect(response.status).toBe(304)
        expect(response.text).toBe('')
        expect(response.headers.get('etag')).toBe(tag)
      }
    })

    it('answers 200 with the body once the product changed', async () => {
      const tag = (await server.api.get(productPath)).headers.get('etag') as string
      await server.api.patch(productPath, { json: { stock: 3 }, token })
      const response = await server.api.get(productPath, { headers: { 'if-none-match': tag } })
      expect(response.status).toBe(200)
      expect(response.body.data.stock).toBe(3)
      expect(response.headers.get('etag')).not.toBe(tag)
    })

    it('tags lists too, and a new product changes the tag', async () => {
      const before = (await server.api.get('/products')).headers.get('etag') as string
      const cached = await server.api.get('/products', { headers: { 'if-none-match': before } })
      expect(cached.status).toBe(304)
      await server.api.post('/products', { json: lamp, token })
      const after = await server.api.get('/products', { headers: { 'if-none-match': before } })
      expect(after.status).toBe(200)
    })

    it('tags neither writes nor errors', async () => {
      const created = await server.api.post('/products', { json: lamp, token })
      expect(created.headers.get('etag')).toBeNull()
      expect((await server.api.get('/products/2147483647')).headers.get('etag')).toBeNull()
    })
  })

  describe('405', () => {
    it.each([
      ['POST', '/products/1', 'DELETE, GET, HEAD, PATCH, PUT'],
      ['DELETE', '/products', 'GET, HEAD, POST'],
      ['GET', '/auth/login', 'POST'],
    ])(
      'answers %s %s with 405 and Allow: %s, before any authentication',
      async (method, path, allow) => {
        const response = await server.api.request(method, path)
        expect(response.status).toBe(405)
        expect(response.body.error.code).toBe('METHOD_NOT_ALLOWED')
        expect(response.headers.get('allow')).toBe(allow)
      },
    )
  })

  describe('security headers', () => {
    it.each([
      ['a read', '/products'],
      ['an error', '/nowhere'],
      ['a GraphQL answer', '/graphql?query=%7B__typename%7D'],
    ])("are OWASP's for an API on %s", async (_, path) => {
      const response = await fetch(`${server.baseUrl}${path}`)
      for (const [name, value] of Object.entries(API_SECURITY_HEADERS)) {
        expect(response.headers.get(name), name).toBe(value)
      }
      // A page's headers act only on a document a browser renders.
      expect(response.headers.get('cross-origin-opener-policy')).toBeNull()
      expect(response.headers.get('x-xss-protection')).toBeNull()
    })

    it("are helmet's for the docs page", async () => {
      const response = await fetch(`${server.baseUrl}/docs/static/index.html`)
      expect(response.headers.get('content-type')).toMatch(/^text\/html/)
      expect(response.headers.get('x-content-type-options')).toBe('nosniff')
      expect(response.headers.get('x-frame-options')).toBe('SAMEORIGIN')
      expect(response.headers.get('referrer-policy')).toBe('no-referrer')
      expect(response.headers.get('cross-origin-opener-policy')).toBe('same-origin')
      const policy = response.headers.get('content-security-policy') ?? ''
      expect(policy).toContain("default-src 'self'")
      expect(policy).toContain("script-src 'self'")
      // Plain http must stay plain http (see security-headers.ts).
      expect(policy).not.toContain('upgrade-insecure-requests')
    })
  })
})
