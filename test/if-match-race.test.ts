import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ApiResponse } from './helpers/api.js'
import { backends } from './helpers/backends.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'

/** Writers holding one ETag, sent at once: within one pool of connections (10). */
const WRITERS = 8

/**
 * Concurrent writers holding the same ETag: exactly one write goes through, the others
 * answer 412, whatever the order the database serves them in. On Postgres the row is
 * held locked by another session while every writer arrives, so all of them are inside
 * the database, past their checks of the request, at the same moment: a check made
 * before the write's lock (read, compare, then update) would let each of them through.
 */
describe.each(backends)('writers racing with one ETag on $name', (backend) => {
  let server: TestServer
  let admin: string
  const api = () => server.api
  const tagOf = async (path: string) =>
    (await api().get(path, { token: admin })).headers.get('etag') as string

  beforeAll(async () => {
    server = await startServer(backend)
    admin = (await login(server.api, ADMIN)).accessToken
  })
  afterAll(() => server?.close())

  /** The writes, each sent at once; on Postgres, while another session holds the row. */
  async function race(
    table: 'products' | 'orders',
    id: number,
    writes: (() => Promise<ApiResponse>)[],
  ): Promise<number[]> {
    const url = server.testDatabase.url
    const answers = url ? await whileLocked(url, table, id, writes) : await sendAll(writes)
    return answers.map((answer) => answer.status)
  }

  it(`lets one of ${WRITERS} PATCHes of a product through, and answers 412 to the others`, async () => {
    const created = await api().post('/products', {
      json: { name: 'Raced lamp', price: 10, category: 'race', stock: 0 },
      token: admin,
    })
    const path = `/products/${created.body.data.id}`
    const ifMatch = await tagOf(path)
    const writes = Array.from(
      { length: WRITERS },
      (_, index) => () =>
        api().patch(path, {
          json: { stock: index + 1 },
          token: admin,
          headers: { 'if-match': ifMatch },
        }),
    )
    const statuses = await race('products', created.body.data.id, writes)
    expect(statuses.filter((status) => status === 200)).toHaveLength(1)
    expect(statuses.filter((status) => status === 412)).toHaveLength(WRITERS - 1)
    // What is stored is the winner's write, whole.
    const winner = statuses.indexOf(200)
    expect((await api().get(path)).body.data.stock).toBe(winner + 1)
  })

  it('lets one of a PATCH and a DELETE with one ETag through, where without it both would', async () => {
    const created = await api().post('/products', {
      json: { name: 'Raced bulb', price: 1, category: 'race' },
      token: admin,
    })
    const path = `/products/${created.body.data.id}`
    const headers = { 'if-match': await tagOf(path) }
    const statuses = await race('products', created.body.data.id, [
      () => api().patch(path, { json: { stock: 3 }, token: admin, headers }),
      () => api().delete(path, { token: admin, headers }),
    ])
    // The PATCH first: the DELETE's tag is stale (412). The DELETE first: the PATCH finds
    // the product deleted (410, which comes before 412).
    expect([
      [200, 412],
      [410, 204],
    ]).toContainEqual(statuses)
  })

  it('lets one of two admins move an order, where without If-Match both would', async () => {
    const product = await api().post('/products', {
      json: { name: 'Raced stock', price: 2, category: 'race', stock: 10 },
      token: admin,
    })
    const buyer = await newUser(server.api)
    const order = await api().post('/orders', {
      json: { items: [{ productId: product.body.data.id, quantity: 1 }] },
      token: buyer.accessToken,
    })
    const path = `/orders/${order.body.data.id}`
    const ifMatch = await tagOf(path)
    // PENDING → PAID and PENDING → CANCELLED, then PAID → CANCELLED: each move is on the graph.
    const writes = ['PAID', 'CANCELLED'].map(
      (status) => () =>
        api().patch(path, { json: { status }, token: admin, headers: { 'if-match': ifMatch } }),
    )
    const statuses = await race('orders', order.body.data.id, writes)
    expect(statuses.toSorted()).toEqual([200, 412])
    // The buyer is told of the one move that went through, and of no other.
    const notifications = await api().get('/notifications?limit=1', { token: buyer.accessToken })
    expect(notifications.body.pagination.total).toBe(1)
  })
})

const sendAll = (writes: (() => Promise<ApiResponse>)[]) =>
  Promise.all(writes.map((write) => write()))

/**
 * Sends the writes while another session holds the row locked, and lets it go once
 * every one of them is waiting for that lock inside the database.
 */
async function whileLocked(
  url: string,
  table: 'products' | 'orders',
  id: number,
  writes: (() => Promise<ApiResponse>)[],
): Promise<ApiResponse[]> {
  const holder = postgres(url, { max: 1, onnotice: () => {} })
  const watcher = postgres(url, { max: 1, onnotice: () => {} })
  try {
    let answers: Promise<ApiResponse[]> | undefined
    await holder.begin(async (session) => {
      await session`select 1 from ${session(table)} where id = ${id} for update`
      answers = sendAll(writes)
      await expect
        .poll(() => waitingOnLocks(watcher), { timeout: 30_000, interval: 20 })
        .toBe(writes.length)
    })
    return await (answers as Promise<ApiResponse[]>)
  } finally {
    await Promise.all([holder.end(), watcher.end()])
  }
}

async function waitingOnLocks(sql: postgres.Sql): Promise<number> {
  const [row] = await sql<{ waiting: number }[]>`
    select count(*)::int as waiting from pg_stat_activity
    where datname = current_database() and wait_event_type = 'Lock'`
  return row?.waiting ?? 0
}
