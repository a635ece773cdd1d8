import { STATUS_CODES } from 'node:http'
import { connect } from 'node:net'
import { count, eq } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { messages, products, users } from '../src/db/schema.js'
import { backends } from './helpers/backends.js'
import { graphql, wsClient } from './helpers/graphql.js'
import { ADMIN, login, startServer, type TestServer } from './helpers/server.js'

/**
 * Input that once reached Postgres (a 500) or was read wrongly: each is refused with a
 * clear error in the documented envelope, and changes nothing.
 */

const NUL = 'a\u0000b'
const LONE_SURROGATE = 'a\uD800b'
const product = { name: 'Bad input lamp', price: 12.5, category: 'bad-input', stock: 3 }

describe.each(backends)('bad input on $name', (backend) => {
  let server: TestServer
  let adminToken: string
  let productId: number

  beforeAll(async () => {
    server = await startServer(backend)
    adminToken = (await login(server.api, ADMIN)).accessToken
    const created = await server.api.post('/products', { json: product, token: adminToken })
    productId = created.body.data.id
  })
  afterAll(() => server?.close())

  const db = () => server.testDatabase.database.db
  const rowCount = async (table: typeof products | typeof users | typeof messages) =>
    (await db().select({ rows: count() }).from(table))[0]?.rows

  describe('bodies', () => {
    it('refuses a JSON body sent as text/plain with 415, storing nothing', async () => {
      const before = await rowCount(users)
      const response = await server.api.post('/users', {
        raw: JSON.stringify({ name: 'Plain', email: 'plain@example.com', password: 'password-1' }),
        headers: { 'content-type': 'text/plain' },
      })
      expect(response.status).toBe(415)
      expect(response.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE')
      expect(await rowCount(users)).toBe(before)
    })

    it.each([
      ['POST /users', 'post', '/users', false],
      ['POST /auth/login', 'post', '/auth/login', false],
      ['POST /auth/refresh', 'post', '/auth/refresh', false],
      ['POST /auth/logout', 'post', '/auth/logout', true],
      ['POST /products', 'post', '/products', true],
    ] as const)('answers %s without a body with 400 BAD_REQUEST', async (_, method, path, auth) => {
      const response = await server.api[method](path, auth ? { token: adminToken } : {})
      expect(response.status).toBe(400)
      expect(response.body.error.code).toBe('BAD_REQUEST')
    })

    it('answers PATCH without a body with 400 and leaves the product as it was', async () => {
      const before = await server.api.get(`/products/${productId}`)
      const response = await server.api.patch(`/products/${productId}`, { token: adminToken })
      expect(response.status).toBe(400)
      expect(response.body.error.code).toBe('BAD_REQUEST')
      expect((await server.api.get(`/products/${productId}`)).body).toEqual(before.body)
    })
  })

  describe('text that cannot be stored, or is blank', () => {
    it.each([
      ['search', `/products?search=${encodeURIComponent(NUL)}`],
      ['category', `/products?category=${encodeURIComponent(NUL)}`],
    ])('refuses a NUL in ?%s with 400 naming the parameter', async (parameter, path) => {
      const response = await server.api.get(path)
      expect(response.status).toBe(400)
      expect(response.body.error.code).toBe('VALIDATION_ERROR')
      expect(Object.keys(response.body.error.details)).toEqual([parameter])
    })

    it.each([
      ['a NUL', NUL, 'must not contain NUL characters or unpaired surrogates'],
      [
        'an unpaired surrogate',
        LONE_SURROGATE,
        'must not contain NUL characters or unpaired surrogates',
      ],
      ['only whitespace', ' \t ', 'must not be blank'],
    ])('refuses a product name of %s, storing nothing', async (_, name, message) => {
      const before = await rowCount(products)
      const created = await server.api.post('/products', {
        json: { ...product, name },
        token: adminToken,
      })
      expect(created.status).toBe(400)
      expect(created.body.error.details).toEqual({ name: [message] })
      const patched = await server.api.patch(`/products/${productId}`, {
        json: { category: name },
        token: adminToken,
      })
      expect(patched.status).toBe(400)
      expect(patched.body.error.details).toEqual({ category: [message] })
      expect(await rowCount(products)).toBe(before)
      const [stored] = await db().select().from(products).where(eq(products.id, productId))
      expect(stored?.category).toBe(product.category)
    })

    it.each([
      ['a NUL', NUL],
      ['an unpaired surrogate', LONE_SURROGATE],
      ['only whitespace', '   '],
    ])('refuses a sign-up name of %s, storing nothing', async (_, name) => {
      const before = await rowCount(users)
      const response = await server.api.post('/users', {
        json: { name, email: `odd-name-${before}@example.com`, password: 'password-1' },
      })
      expect(response.status).toBe(400)
      expect(Object.keys(response.body.error.details)).toEqual(['name'])
      expect(await rowCount(users)).toBe(before)
    })
  })

  describe('numbers', () => {
    it.each(['Infinity', '0x10', '1e3', '12.0', ' 12', '2147483648'])(
      'refuses the product id %j on GET, PATCH and DELETE with 400',
      async (id) => {
        const path = `/products/${encodeURIComponent(id)}`
        const responses = [
          await server.api.get(path),
          await server.api.patch(path, { json: { stock: 1 }, token: adminToken }),
          await server.api.delete(path, { token: adminToken }),
        ]
        for (const response of responses) {
          expect(response.status).toBe(400)
          expect(response.body.error.details).toHaveProperty('id')
        }
      },
    )

    it.each([
      ['limit', '0x10'],
      ['page', 'Infinity'],
      ['minPrice', 'Infinity'],
      ['maxPrice', '0x20'],
      // Decimal, but past a double: Number() reads Infinity.
      ['minPrice', '1e400'],
      ['maxPrice', '1e309'],
    ])('refuses ?%s=%s: numbers in a URL are decimal and finite', async (parameter, value) => {
      const response = await server.api.get(`/products?${parameter}=${value}`)
      expect(response.status).toBe(400)
      expect(Object.keys(response.body.error.details)).toEqual([parameter])
    })

    it.each([9_687_400_934.96, 9_999_999_999.99])(
      'accepts the price %d: a multiple of 0.01, though dividing by 0.01 in floating point says not',
      async (price) => {
        const created = await server.api.post('/products', {
          json: { ...product, price },
          token: adminToken,
        })
        expect(created.status, created.text).toBe(201)
        expect(created.body.data.price).toBe(price)
        const patched = await server.api.patch(`/products/${created.body.data.id}`, {
          json: { price },
          token: adminToken,
        })
        expect(patched.status, patched.text).toBe(200)
      },
    )

    it('refuses a price that rounds to 0.00, storing nothing', async () => {
      const before = await rowCount(products)
      const response = await server.api.post('/products', {
        json: { ...product, price: 5e-324 },
        token: adminToken,
      })
      expect(response.status).toBe(400)
      expect(response.body.error.details).toEqual({ price: ['must be at least 0.01'] })
      expect(await rowCount(products)).toBe(before)
    })
  })

  describe('URLs and headers', () => {
    it.each([
      ['GET', '/products/%E0%A4%A'],
      ['GET', '/products/%'],
      ['PATCH', '/products/%zz'],
      ['DELETE', '/products/%C0%AF'],
    ])('answers %s %s, which does not decode, with 400 in the envelope', async (method, path) => {
      const body = method === 'PATCH' ? { json: { stock: 1 } } : {}
      const response = await server.api.request(method, path, { ...body, token: adminToken })
      expect(response.status).toBe(400)
      expect(response.body.error.code).toBe('BAD_REQUEST')
      expect(response.headers.get('x-request-id')).toBeTruthy()
    })

    it('answers an id longer than the router takes with 400 in the envelope, not 414', async () => {
      const response = await server.api.get(`/products/${'9'.repeat(3000)}`)
      expect(response.status).toBe(400)
      expect(response.body.error.code).toBe('BAD_REQUEST')
      expect(response.headers.get('x-request-id')).toBeTruthy()
    })

    it.each([
      [
        'headers over the size limit',
        431,
        `GET /products HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      ],
      ['a request line that is not HTTP', 400, 'GET /products HTTP/9\r\n\r\n'],
      ['a header without a colon', 400, 'GET /products HTTP/1.1\r\nHost x\r\n\r\n'],
    ])(
      'answers %s, which Node refuses before routing, with %i in the envelope',
      async (_, status, request) => {
        const answer = await rawHttp(server.baseUrl, request)
        const [head = '', body = ''] = answer.split('\r\n\r\n')
        expect(head.split('\r\n')[0]).toBe(`HTTP/1.1 ${status} ${STATUS_CODES[status]}`)
        expect(head).toMatch(/content-type: application\/json/i)
        expect(JSON.parse(body)).toEqual({
          error: { code: 'BAD_REQUEST', message: expect.any(String) },
        })
      },
    )

    /** A raw request with `headers` after its own Host and Connection: close. */
    const requestWith = (headers: string[], head = 'GET /products') =>
      [`${head} HTTP/1.1`, 'Host: x', 'Connection: close', ...headers, '', ''].join('\r\n')
    const answerOf = async (request: string) => {
      const [head = '', body = ''] = (await rawHttp(server.baseUrl, request)).split('\r\n\r\n')
      return { status: Number(head.split(' ')[1]), head, body: JSON.parse(body || 'null') }
    }
    const numbered = (count: number) => Array.from({ length: count }, (_, i) => `X-H${i}: v`)

    it.each([
      [198, 200],
      [199, 431],
    ])('answers %i headers more than its own two with %i', async (count, status) => {
      const answer = await answerOf(requestWith(numbered(count)))
      expect(answer.status).toBe(status)
      expect(answer.head).toMatch(/x-request-id: /i)
      if (status === 431) {
        expect(answer.body).toEqual({
          error: { code: 'BAD_REQUEST', message: 'A request may carry at most 200 headers' },
        })
      }
    })

    it('answers 1500 headers with 431 in the envelope, whichever refuses them', async () => {
      // Node 20 parses them and the service counts them; Node 24's parser finds them over
      // its 16 KiB first.
      const answer = await answerOf(requestWith(numbered(1500)))
      expect(answer.status).toBe(431)
      expect(answer.body).toEqual({ error: { code: 'BAD_REQUEST', message: expect.any(String) } })
    })

    it('refuses a second Host with 400 in the envelope, creating nothing', async () => {
      const before = await rowCount(products)
      const body = JSON.stringify(product)
      const create = requestWith(
        [
          'Host: elsewhere',
          `Authorization: Bearer ${adminToken}`,
          'Content-Type: application/json',
          `Content-Length: ${body.length}`,
        ],
        'POST /products',
      )
      const answer = await answerOf(`${create}${body}`)
      expect(answer.status).toBe(400)
      expect(answer.body).toEqual({
        error: { code: 'BAD_REQUEST', message: 'The request names its Host more than once' },
      })
      expect(await rowCount(products)).toBe(before)
      expect((await answerOf(requestWith([`Authorization: Bearer ${adminToken}`]))).status).toBe(
        200,
      )
    })

    it('holds If-None-Match to its 1024 characters, as openapi.yaml has it', async () => {
      const tag = (length: number) => ({ 'if-none-match': `"${'x'.repeat(length - 2)}"` })
      const refused = await server.api.get(`/products/${productId}`, { headers: tag(1025) })
      expect(refused.status).toBe(400)
      expect(Object.keys(refused.body.error.details)).toEqual(['if-none-match'])
      expect((await server.api.get('/health', { headers: tag(1025) })).status).toBe(400)
      expect((await server.api.get(`/products/${productId}`, { headers: tag(1024) })).status).toBe(
        200,
      )
    })
  })

  describe('GraphQL', () => {
    const SEND = `mutation($text: String!, $author: String!, $chatId: ID!) {
      sendMessage(text: $text, author: $author, chatId: $chatId) { id }
    }`
    const valid = { text: 'hello', author: 'ann', chatId: 'bad-input' }

    it.each([
      ['text', NUL],
      ['text', LONE_SURROGATE],
      ['author', NUL],
      ['chatId', NUL],
      ['text', '  \n '],
      ['author', ' '],
      // schema.graphql: the chat to post in is 1 to 100 characters, not only whitespace.
      ['chatId', ''],
      ['chatId', ' \t '],
      ['chatId', 'c'.repeat(101)],
    ])(
      'refuses sendMessage with a bad %s (%j) as BAD_USER_INPUT, storing nothing',
      async (field, value) => {
        const before = await rowCount(messages)
        const response = await graphql(server.baseUrl, SEND, { ...valid, [field]: value })
        const [error] = response.body.errors ?? []
        expect(error?.extensions?.code).toBe('BAD_USER_INPUT')
        expect(Object.keys(error?.extensions?.details ?? {})).toEqual([field])
        expect(await rowCount(messages)).toBe(before)
      },
    )

    it('posts to a chat whose id has 100 characters, the most schema.graphql documents', async () => {
      const response = await graphql(server.baseUrl, SEND, { ...valid, chatId: 'c'.repeat(100) })
      expect(response.body.errors).toBeUndefined()
      expect(response.body.data.sendMessage.id).toBeTruthy()
    })

    it('refuses to list a chat whose id holds a NUL', async () => {
      const response = await graphql(
        server.baseUrl,
        'query($c: ID) { messages(chatId: $c) { id } }',
        {
          c: NUL,
        },
      )
      expect(response.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT')
    })

    it.each([
      ['a NUL', NUL],
      ['an unpaired surrogate', LONE_SURROGATE],
    ])('refuses to follow a chat whose id holds %s, over WebSocket', async (_, chatId) => {
      const client = wsClient(server.baseUrl)
      try {
        // Refused as it starts: a result with errors, and nothing followed.
        const first = await new Promise<any>((resolve) =>
          client.subscribe(
            {
              query: 'subscription($c: ID) { messageAdded(chatId: $c) { id } }',
              variables: { c: chatId },
            },
            { next: resolve, error: resolve, complete: () => {} },
          ),
        )
        expect(first.errors?.[0]?.extensions).toMatchObject({
          code: 'BAD_USER_INPUT',
          details: { chatId: ['is not a chat id'] },
        })
        expect(server.events.activeSubscriptions()).toBe(0)
      } finally {
        await client.dispose()
      }
    })

    it('answers a subscription sent over HTTP with BAD_USER_INPUT, pointing to WebSocket', async () => {
      const response = await graphql(server.baseUrl, 'subscription { messageAdded { id } }')
      expect(response.body.errors).toEqual([
        expect.objectContaining({
          message: expect.stringMatching(/WebSocket/),
          extensions: { code: 'BAD_USER_INPUT' },
        }),
      ])
    })

    it('answers a bad variable the same way however often it is sent (the compiled query too)', async () => {
      const query = 'query($l: Int) { messages(limit: $l) { id } }'
      for (let attempt = 0; attempt < 4; attempt += 1) {
        const response = await graphql(server.baseUrl, query, { l: 'x' })
        expect(response.body.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED')
      }
    })
  })
})

/** Sends bytes as they are, no client in between, and reads until the server closes. */
function rawHttp(baseUrl: string, request: string): Promise<string> {
  const { hostname, port } = new URL(baseUrl)
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    const socket = connect(Number(port), hostname, () => socket.write(request))
    socket.on('data', (chunk) => chunks.push(chunk))
    socket.on('error', reject)
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')))
  })
}
