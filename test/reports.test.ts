import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { csvField, csvRecord, csvStream } from '../src/domains/reports/csv.js'
import { backends } from './helpers/backends.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'

const today = () => new Date().toISOString().slice(0, 10)

describe('CSV encoding (RFC 4180)', () => {
  it.each([
    ['plain', 'plain'],
    ['a, b', '"a, b"'],
    ['say "hi"', '"say ""hi"""'],
    ['two\nlines', '"two\nlines"'],
    ['cr\rhere', '"cr\rhere"'],
    ['', ''],
    ['naïve café ☕', 'naïve café ☕'],
    ['=SUM(A1:A2)', "'=SUM(A1:A2)"],
    ['+1', "'+1"],
    ['-1', "'-1"],
    ['@cmd', "'@cmd"],
    ['\tlead', "'\tlead"],
    ['=a,"b"', `"'=a,""b"""`],
  ])('writes %j as %s', (text, field) => {
    expect(csvField(text)).toBe(field)
  })

  it('writes numbers as they are, negative ones too, and nothing for null', () => {
    expect(csvRecord([-1.5, 0, 12, null, undefined])).toBe('-1.5,0,12,,\r\n')
  })

  it('streams a header and then each row, CRLF-ended', async () => {
    const chunks: string[] = []
    for await (const chunk of csvStream(
      ['a', 'b'],
      [
        ['x', 1],
        ['y, z', 2],
      ],
    )) {
      chunks.push(String(chunk))
    }
    expect(chunks.join('')).toBe('a,b\r\nx,1\r\n"y, z",2\r\n')
    expect(chunks.length).toBe(3)
  })
})

describe.each(backends)('reports on $name', (backend) => {
  let server: TestServer
  let admin: string
  let buyer: Awaited<ReturnType<typeof newUser>>
  let recording = false
  const statements: string[] = []
  const logger = {
    logQuery(query: string) {
      if (recording) statements.push(query)
    },
  }
  const api = () => server.api
  const report = (type: string, headers: Record<string, string> = {}) =>
    api().get(`/reports/generate?type=${type}`, { token: admin, headers })
  const product = async (name: string, category: string, price: number, stock: number) => {
    const response = await api().post('/products', {
      json: { name, category, price, stock },
      token: admin,
    })
    expect(response.status, response.text).toBe(201)
    return response.body.data as { id: number }
  }

  beforeAll(async () => {
    server = await startServer(backend, {}, { databaseLogger: logger })
    admin = (await login(server.api, ADMIN)).accessToken
    buyer = await newUser(server.api)
    await product('Hammer', 'tools', 10, 3)
    await product('Saw', 'tools', 25.5, 2)
    await product('Drill', 'tools', 99.99, 0)
    await product('Kettle', 'kitchen, "pro"', 20, 5)
    await product('Formula', '=HYPERLINK("x")', 1.25, 4)
    const gone = await product('Ghost', 'tools', 1000, 100)
    expect((await api().delete(`/products/${gone.id}`, { token: admin })).status).toBe(204)
  })
  afterAll(() => server?.close())

  describe('type=catalog', () => {
    it('gives each category of live products its figures, in category order', async () => {
      const response = await report('catalog')
      expect(response.status, response.text).toBe(200)
      const { type, generatedAt, categories } = response.body.data
      expect(type).toBe('catalog')
      expect(Math.abs(Date.parse(generatedAt) - Date.now())).toBeLessThan(60_000)
      expect(categories).toEqual([
        {
          category: '=HYPERLINK("x")',
          products: 1,
          minPrice: 1.25,
          avgPrice: 1.25,
          maxPrice: 1.25,
          totalStock: 4,
          stockValue: 5,
        },
        {
          category: 'kitchen, "pro"',
          products: 1,
          minPrice: 20,
          avgPrice: 20,
          maxPrice: 20,
          totalStock: 5,
          stockValue: 100,
        },
        {
          category: 'tools',
          products: 3,
          minPrice: 10,
          avgPrice: 45.16,
          maxPrice: 99.99,
          totalStock: 5,
          stockValue: 81,
        },
      ])
    })

    it('answers CSV when Accept prefers it: quoted, formulas defused, as an attachment', async () => {
      const response = await report('catalog', { accept: 'text/csv' })
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8; header=present')
      expect(response.headers.get('content-disposition')).toBe(
        `attachment; filename="catalog-report-${today()}.csv"`,
      )
      expect(response.text).toBe(
        [
          'category,products,minPrice,avgPrice,maxPrice,totalStock,stockValue',
          `"'=HYPERLINK(""x"")",1,1.25,1.25,1.25,4,5`,
          '"kitchen, ""pro""",1,20,20,20,5,100',
          'tools,3,10,45.16,99.99,5,81',
          '',
        ].join('\r\n'),
      )
    })

    it('takes a fixed number of statements however many products there are', async () => {
      const statementsOf = async () => {
        statements.length = 0
        recording = true
        try {
          expect((await report('catalog')).status).toBe(200)
          return statements.filter((query) => /\bproducts\b/.test(query)).length
        } finally {
          recording = false
        }
      }
      const before = await statementsOf()
      for (let index = 0; index < 20; index += 1) await product(`Bulk ${index}`, 'bulk', 2, 1)
      expect(await statementsOf()).toBe(before)
      expect(before).toBe(1)
    })
  })

  describe('type=orders', () => {
    it('gives the orders of each status and of each day, in JSON and in CSV', async () => {
      const kettle = (await api().get('/products?category=kitchen%2C%20%22pro%22')).body.data[0]
      const place = async (quantity: number) => {
        const response = await api().post('/orders', {
          json: { items: [{ productId: kettle.id, quantity }] },
          token: buyer.accessToken,
        })
        expect(response.status, response.text).toBe(201)
        return response.body.data as { id: number }
      }
      const [first, second] = [await place(1), await place(2)]
      await place(1)
      expect(
        (await api().post(`/orders/${first.id}/cancel`, { token: buyer.accessToken })).status,
      ).toBe(200)
      const paid = await api().patch(`/orders/${second.id}`, {
        json: { status: 'PAID' },
        token: admin,
      })
      expect(paid.status, paid.text).toBe(200)

      const response = await report('orders')
      expect(response.status, response.text).toBe(200)
      expect(response.body.data).toMatchObject({
        type: 'orders',
        byStatus: [
          { status: 'CANCELLED', orders: 1, total: 20 },
          { status: 'PAID', orders: 1, total: 40 },
          { status: 'PENDING', orders: 1, total: 20 },
        ],
        byDay: [
          {
            day: today(),
            orders: 3,
            total: 80,
            byStatus: { CANCELLED: 1, PAID: 1, PENDING: 1 },
          },
        ],
      })

      const csv = await report('orders', { accept: 'text/csv, application/json;q=0.5' })
      expect(csv.headers.get('content-disposition')).toBe(
        `attachment; filename="orders-report-${today()}.csv"`,
      )
      expect(csv.text).toBe(
        [
          'day,status,orders,total',
          `${today()},CANCELLED,1,20`,
          `${today()},PAID,1,40`,
          `${today()},PENDING,1,20`,
          '',
        ].join('\r\n'),
      )
    })
  })

  describe('negotiation', () => {
    it.each([
      [{}, 'application/json'],
      [{ accept: '*/*' }, 'application/json'],
      [{ accept: 'text/csv;q=0.5, application/json' }, 'application/json'],
      [{ accept: 'text/*' }, 'text/csv'],
      [{ accept: 'application/vnd.catalog.v2+json' }, 'application/json'],
    ])('answers %o as %s', async (headers, mediaType) => {
      const response = await report('catalog', headers)
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toMatch(new RegExp(`^${mediaType}`))
    })

    it('answers 406 when neither JSON nor CSV is acceptable', async () => {
      const response = await report('catalog', { accept: 'text/html' })
      expect(response.status).toBe(406)
      expect(response.body.error.message).toMatch(/JSON or text\/csv/)
    })
  })

  describe('refusals', () => {
    it.each([['sales'], [''], ['CATALOG']])(
      'refuses type=%j with 400 and details',
      async (type) => {
        const response = await report(type)
        expect(response.status).toBe(400)
        expect(response.body.error.code).toBe('VALIDATION_ERROR')
        expect(Object.keys(response.body.error.details)).toEqual(['type'])
      },
    )

    it('refuses a missing type with 400', async () => {
      const response = await api().get('/reports/generate', { token: admin })
      expect(response.status).toBe(400)
      expect(response.body.error.details).toHaveProperty('type')
    })

    it('is for admins: 401 without a token, 403 for a user', async () => {
      expect((await api().get('/reports/generate?type=catalog')).status).toBe(401)
      const user = await api().get('/reports/generate?type=catalog', { token: buyer.accessToken })
      expect(user.status).toBe(403)
    })
  })
})
