import { and, desc, eq, isNull } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { products } from '../src/db/schema.js'
import { backends } from './helpers/backends.js'
import { startServer, type TestServer } from './helpers/server.js'

type Page = {
  data: { id: number; name: string }[]
  pagination: { page: number; hasNext: boolean; hasPrev: boolean; nextCursor: string | null }
}

// 45 shelves share one createdAt, so only the id orders them; 15 lamps sit on either
// side of it, a minute apart.
const tie = new Date('2026-02-01T00:00:00.000Z')
const seed = [
  ...Array.from({ length: 45 }, (_, index) => ({
    name: `Shelf ${index}`,
    price: 20 + index,
    category: 'shelves',
    createdAt: tie,
  })),
  ...Array.from({ length: 15 }, (_, index) => ({
    name: `Lamp ${index}`,
    price: 5 + index,
    category: 'lamps',
    createdAt: new Date(tie.getTime() + (index - 7) * 60_000),
  })),
]

const base64url = (text: string) => Buffer.from(text).toString('base64url')
const fieldsOf = (cursor: string) => JSON.parse(Buffer.from(cursor, 'base64url').toString())

describe.each(backends)('product list by cursor on $name', (backend) => {
  let server: TestServer
  const list = async (query: string) => {
    const response = await server.api.get(`/products?${query}`)
    expect(response.status, response.text).toBe(200)
    return response.body as Page
  }
  const refusal = async (query: string) => {
    const response = await server.api.get(`/products?${query}`)
    expect(response.status, response.text).toBe(400)
    expect(response.body.error.code).toBe('VALIDATION_ERROR')
    return response.body.error.details as Record<string, string[]>
  }
  /** Every page of a query from the cursor (or its first page), following nextCursor. */
  const walk = async (query: string, from?: string | null) => {
    const pages = [await list(from ? `${query}&cursor=${from}` : query)]
    for (let cursor = pages[0]?.pagination.nextCursor; cursor && pages.length < 100; ) {
      const page = await list(`${query}&cursor=${cursor}`)
      pages.push(page)
      cursor = page.pagination.nextCursor
    }
    return pages
  }
  const idsOf = (pages: Page[]) => pages.flatMap((page) => page.data.map((each) => each.id))
  /** The live ids of a category (or all) in the list order, read from the table. */
  const storedOrder = async (category?: string) => {
    const rows = await server.testDatabase.database.db
      .select({ id: products.id })
      .from(products)
      .where(
        and(isNull(products.deletedAt), category ? eq(products.category, category) : undefined),
      )
      .orderBy(desc(products.createdAt), desc(products.id))
    return rows.map((row) => row.id)
  }

  beforeAll(async () => {
    server = await startServer(backend)
    await server.testDatabase.database.db.insert(products).values(seed)
  })
  afterAll(() => server?.close())

  it('walks every product once, in order, with the figures of each page', async () => {
    const pages = await walk('limit=7')
    expect(idsOf(pages)).toEqual(await storedOrder())
    expect(pages.map((page) => page.pagination)).toEqual(
      pages.map((_, index) => ({
        page: index + 1,
        limit: 7,
        total: 60,
        pages: 9,
        hasNext: index < 8,
        hasPrev: index > 0,
        nextCursor: index < 8 ? expect.any(String) : null,
      })),
    )
  })

  it('walks rows that share one createdAt by id, none skipped or repeated', async () => {
    const pages = await walk('category=shelves&limit=4')
    expect(idsOf(pages)).toEqual(await storedOrder('shelves'))
    expect(pages).toHaveLength(12)
  })

  it('keeps every filter along the walk', async () => {
    const query = 'category=shelves&minPrice=30&maxPrice=44&search=shelf&limit=3'
    const walked = idsOf(await walk(query))
    expect(walked).toEqual(idsOf([await list(`${query.replace('limit=3', 'limit=100')}`)]))
    expect(walked).toHaveLength(15)
  })

  it('goes on by cursor from a numbered page, as the next number would', async () => {
    const third = await list('limit=5&page=3')
    const next = await list(`limit=5&cursor=${third.pagination.nextCursor}`)
    // The same items and figures, down to the cursor of the page after.
    expect(next).toEqual(await list('limit=5&page=4'))
    expect(next.pagination).toMatchObject({ page: 4, hasPrev: true, hasNext: true })
  })

  it('lets the limit change along the walk', async () => {
    const first = await list('limit=5')
    const next = await list(`limit=20&cursor=${first.pagination.nextCursor}`)
    expect(idsOf([next])).toEqual((await storedOrder()).slice(5, 25))
    // Its first item, the sixth, is on page 1 of 20.
    expect(next.pagination).toMatchObject({ page: 1, hasPrev: true })
  })

  it('meets every product that stays exactly once while others come and go', async () => {
    const db = server.testDatabase.database.db
    const [first, ...rest] = await storedOrder('lamps')
    const page = await list('category=lamps&limit=4')
    // A newer lamp, one already seen gone, one not yet seen gone: offsets would shift.
    const newest = new Date(tie.getTime() + 3_600_000)
    await db
      .insert(products)
      .values({ name: 'Lamp 15', price: 9, category: 'lamps', createdAt: newest })
    for (const id of [first, rest[8]] as number[]) {
      await db.update(products).set({ deletedAt: new Date() }).where(eq(products.id, id))
    }
    const pages = [page, ...(await walk('category=lamps&limit=4', page.pagination.nextCursor))]
    expect(idsOf(pages)).toEqual([first, ...rest].filter((id) => id !== rest[8]))
  })

  describe('refuses a cursor it did not give for this list, naming only cursor', () => {
    let cursor: string
    const reissued = (changes: Record<string, unknown>) =>
      base64url(JSON.stringify({ ...fieldsOf(cursor), ...changes }))
    beforeAll(async () => {
      cursor = (await list('category=shelves&limit=2')).pagination.nextCursor as string
    })

    it.each([
      ['garbage', () => encodeURIComponent('not a cursor!')],
      ['too long for any cursor', () => 'A'.repeat(257)],
      ['not base64url', () => 'A'],
      ['base64url of no JSON', () => base64url('shelves, after 42')],
      ['base64url of JSON of another shape', () => base64url('{"v":1,"id":42}')],
      ['base64url of an array', () => base64url('[1,"2026-02-01",42]')],
      ['its fields of the wrong type', () => reissued({ id: '42' })],
      ['a date that does not exist', () => reissued({ createdAt: '2026-02-30T00:00:00.000000Z' })],
      ['an unknown version', () => reissued({ v: 2 })],
    ])('%s', async (_, cursorOf) => {
      const details = await refusal(`category=shelves&cursor=${cursorOf()}`)
      expect(Object.keys(details)).toEqual(['cursor'])
    })

    it('one altered', async () => {
      const moved = reissued({ id: fieldsOf(cursor).id - 1 })
      expect(await refusal(`category=shelves&cursor=${moved}`)).toEqual({
        cursor: [expect.stringMatching(/altered/)],
      })
    })

    it.each([
      ['another category', 'category=lamps'],
      ['no filter', ''],
      ['a filter more', 'category=shelves&minPrice=1'],
    ])('one of another list: %s', async (_, filters) => {
      expect(await refusal(`${filters}&cursor=${cursor}`)).toEqual({
        cursor: [expect.stringMatching(/other filters/)],
      })
    })

    it('a page number beside a cursor, naming page (and every other problem)', async () => {
      expect(Object.keys(await refusal(`category=shelves&page=1&cursor=${cursor}`))).toEqual([
        'page',
      ])
      const details = await refusal(`category=lamps&search=__&page=2&cursor=${cursor}`)
      expect(Object.keys(details).sort()).toEqual(['cursor', 'page', 'search'])
    })
  })
})
