import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { products } from '../src/db/schema.js'
import { rowsOf } from '../src/db/statement-rows.js'
import { backends } from './helpers/backends.js'
import { ADMIN, login, startServer, type TestServer } from './helpers/server.js'

type Product = { id: number; name: string; price: number; category: string; createdAt: string }

// 23 products: four share one createdAt (Chair 0 and the last three), to prove the
// tie-break by id.
const base = Date.parse('2026-01-01T00:00:00.000Z')
const seed = [
  ...Array.from({ length: 20 }, (_, index) => ({
    name: `Chair ${index}`,
    price: 10 + index,
    category: index % 2 === 0 ? 'chairs' : 'Chairs',
    createdAt: new Date(base + index * 60_000),
  })),
  { name: '100% Cotton_Sheet', price: 5.5, category: 'linen', createdAt: new Date(base) },
  { name: '100 Cotton Sheet', price: 5.5, category: 'linen', createdAt: new Date(base) },
  { name: 'Oak TABLE', price: 250, category: 'tables', createdAt: new Date(base) },
]

describe.each(backends)('product list on $name', (backend) => {
  let server: TestServer
  const list = async (query = '') => {
    const response = await server.api.get(`/products${query}`)
    expect(response.status, response.text).toBe(200)
    return response.body as { data: Product[]; pagination: Record<string, unknown> }
  }
  const names = async (query: string) => (await list(query)).data.map((each) => each.name)

  beforeAll(async () => {
    server = await startServer(backend)
    await server.testDatabase.database.db.insert(products).values(seed)
  })
  afterAll(() => server?.close())

  it('answers page 1 of 10 by default, with the figures', async () => {
    const { data, pagination } = await list()
    expect(data).toHaveLength(10)
    expect(pagination).toEqual({
      page: 1,
      limit: 10,
      total: 23,
      pages: 3,
      hasNext: true,
      hasPrev: false,
      nextCursor: expect.any(String),
    })
  })

  it('orders by createdAt descending, ties by id descending', async () => {
    const { data } = await list('?limit=100')
    const keys = data.map((each) => [each.createdAt, each.id] as const)
    const sorted = [...keys].sort(([a, x], [b, y]) => b.localeCompare(a) || y - x)
    expect(keys).toEqual(sorted)
    expect(data.slice(-4).map((each) => each.name)).toEqual([
      'Oak TABLE',
      '100 Cotton Sheet',
      '100% Cotton_Sheet',
      'Chair 0',
    ])
  })

  it('pages through every product once', async () => {
    const pages = await Promise.all([1, 2, 3].map((page) => list(`?page=${page}&limit=10`)))
    const ids = pages.flatMap((each) => each.data.map((product) => product.id))
    expect(new Set(ids).size).toBe(23)
    expect(pages[2]?.pagination).toMatchObject({ page: 3, hasNext: false, hasPrev: true })
    expect(pages[2]?.data).toHaveLength(3)
  })

  it('answers a page past the last with no items and the right figures', async () => {
    const { data, pagination } = await list('?page=9&limit=5')
    expect(data).toEqual([])
    expect(pagination).toEqual({
      page: 9,
      limit: 5,
      total: 23,
      pages: 5,
      hasNext: false,
      hasPrev: true,
      nextCursor: null,
    })
  })

  it.each([
    ['1', 1],
    ['100', 23],
  ])('accepts limit=%s', async (limit, length) => {
    expect((await list(`?limit=${limit}`)).data).toHaveLength(length)
  })

  it.each([
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=ten', 'limit'],
    ['page=0', 'page'],
    ['page=-1', 'page'],
    ['page=abc', 'page'],
    ['minPrice=-1', 'minPrice'],
    ['maxPrice=cheap', 'maxPrice'],
    ['search=', 'search'],
    [`search=${'s'.repeat(101)}`, 'search'],
    // No letter or digit: nothing the trigram index could find it by.
    [`search=${'%25'.repeat(100)}`, 'search'],
    ['search=__', 'search'],
    ['search=%20%20', 'search'],
  ])('rejects %s with VALIDATION_ERROR on that parameter', async (query, field) => {
    const response = await server.api.get(`/products?${query}`)
    expect(response.status).toBe(400)
    expect(response.body.error.code).toBe('VALIDATION_ERROR')
    expect(Object.keys(response.body.error.details)).toEqual([field])
  })

  it('matches the category exactly and case-sensitively', async () => {
    expect((await list('?category=chairs')).pagination.total).toBe(10)
    expect((await list('?category=Chairs')).pagination.total).toBe(10)
    expect((await list('?category=chair')).pagination.total).toBe(0)
  })

  it('keeps prices within minPrice and maxPrice, both inclusive', async () => {
    const { data } = await list('?minPrice=12&maxPrice=14&limit=100')
    expect(data.map((each) => each.price).sort()).toEqual([12, 13, 14])
    expect((await list('?minPrice=250&maxPrice=250')).pagination.total).toBe(1)
    expect((await list('?minPrice=29.01')).pagination.total).toBe(1)
  })

  it('answers 422 when minPrice is above maxPrice', async () => {
    const response = await server.api.get('/products?minPrice=20&maxPrice=10')
    expect(response.status).toBe(422)
    expect(response.body.error.code).toBe('UNPROCESSABLE')
  })

  it('searches names case-insensitively, as a substring', async () => {
    expect(await names('?search=oak%20table')).toEqual(['Oak TABLE'])
    expect(await names('?search=AIR%2019')).toEqual(['Chair 19'])
  })

  it('treats % and _ in the search as themselves', async () => {
    expect(await names('?search=100%25')).toEqual(['100% Cotton_Sheet'])
    expect(await names('?search=n_s')).toEqual(['100% Cotton_Sheet'])
  })

  it('keeps the totals of the lists right as products move and leave', async () => {
    const [chair] = (await list('?category=chairs&limit=1')).data
    const token = (await login(server.api, ADMIN)).accessToken
    const moved = await server.api.patch(`/products/${chair?.id}`, {
      json: { category: 'stools' },
      token,
    })
    expect(moved.status).toBe(200)
    expect((await list('?category=chairs')).pagination.total).toBe(9)
    expect((await list('?category=stools')).pagination.total).toBe(1)
    expect((await list()).pagination.total).toBe(23)
    await server.api.delete(`/products/${chair?.id}`, { token })
    expect((await list('?category=stools')).pagination.total).toBe(0)
    expect((await list()).pagination.total).toBe(22)
    // Put the seed back as the other tests of this file expect it.
    await server.testDatabase.database.db.insert(products).values({
      name: 'Chair 18',
      price: 28,
      category: 'chairs',
      createdAt: new Date(base + 18 * 60_000),
    })
  })

  it('keeps a category total exact under concurrent creates and deletes', async () => {
    const token = (await login(server.api, ADMIN)).accessToken
    const created = await Promise.all(
      Array.from({ length: 40 }, (_, index) =>
        server.api.post('/products', {
          json: { name: `Bench ${index}`, price: 50, category: 'benches' },
          token,
        }),
      ),
    )
    expect(created.map((response) => response.status)).toEqual(created.map(() => 201))
    // On more than one row where writers have sessions of their own (PGlite has one):
    // one row per category would hold each writer behind the others' commits.
    const [counted] = rowsOf<{ rows: number }>(
      await server.testDatabase.database.db.execute(
        sql`select count(*)::int as rows from product_counts where category = 'benches'`,
      ),
    )
    if (backend.name === 'postgres') expect(counted?.rows).toBeGreaterThan(1)
    else expect(counted?.rows).toBe(1)
    const ids = created.map((response) => (response.body as { data: Product }).data.id)
    const removed = await Promise.all(
      ids.slice(0, 15).map((id) => server.api.delete(`/products/${id}`, { token })),
    )
    expect(removed.map((response) => response.status)).toEqual(removed.map(() => 204))
    expect((await list('?category=benches')).pagination.total).toBe(25)
    expect((await list()).pagination.total).toBe(48)
    await Promise.all(ids.slice(15).map((id) => server.api.delete(`/products/${id}`, { token })))
    expect((await list('?category=benches')).pagination.total).toBe(0)
    expect((await list()).pagination.total).toBe(23)
  })

  it('combines every filter', async () => {
    const { data, pagination } = await list(
      '?category=chairs&minPrice=12&maxPrice=20&search=chair&limit=2&page=2',
    )
    // chairs priced 12..20 are Chair 2, 4, 6, 8, 10; newest first, the second page of two.
    expect(data.map((each) => each.name)).toEqual(['Chair 6', 'Chair 4'])
    expect(pagination).toMatchObject({ total: 5, pages: 3, hasNext: true, hasPrev: true })
  })
})
