import { eq } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { products } from '../src/db/schema.js'
import { type Backend, backends } from './helpers/backends.js'
import { redisUrl } from './helpers/redis.js'
import { ADMIN, login, startServer, type TestServer } from './helpers/server.js'

/**
 * The catalog's reads come from a cache that every instance shares through Redis (or that
 * one instance keeps in memory), and every write through the API invalidates it. A change
 * made behind the API's back shows that a read was served from the cache.
 */

/**
 * Entries outlive any pause of a loaded machine between a read and the read that must hit
 * it: at the default of 5 s, a CI run once saw an entry expire between the two.
 */
const TTL_SECONDS = '300'

const setups: { name: string; environment: Record<string, string> }[] = [
  { name: 'in memory', environment: { CACHE_TTL_SECONDS: TTL_SECONDS } },
  ...(redisUrl
    ? [{ name: 'in Redis', environment: { REDIS_URL: redisUrl, CACHE_TTL_SECONDS: TTL_SECONDS } }]
    : []),
]

async function renameBehindTheApi(server: TestServer, id: number, name: string) {
  await server.testDatabase.database.db.update(products).set({ name }).where(eq(products.id, id))
}

describe.each(backends)('the catalog read cache on $name', (backend: Backend) => {
  describe.each(setups)('$name', ({ environment }) => {
    let server: TestServer
    let token: string
    const category = `cached-${backend.name}`

    beforeAll(async () => {
      server = await startServer(backend, environment)
      token = (await login(server.api, ADMIN)).accessToken
    })
    afterAll(() => server?.close())

    const create = async (name: string) => {
      const response = await server.api.post('/products', {
        json: { name, price: 5, category },
        token,
      })
      expect(response.status, response.text).toBe(201)
      return response.body.data as { id: number; name: string; createdAt: string }
    }
    const listedNames = async () =>
      (await server.api.get(`/products?category=${category}`)).body.data.map(
        ({ name }: { name: string }) => name,
      )

    it('serves a product and a list from the cache until a write through the API', async () => {
      const product = await create('Cached lamp')
      expect((await server.api.get(`/products/${product.id}`)).body.data.name).toBe('Cached lamp')
      expect(await listedNames()).toContain('Cached lamp')

      await renameBehindTheApi(server, product.id, 'Changed behind the API')
      const cached = await server.api.get(`/products/${product.id}`)
      expect(cached.body.data.name).toBe('Cached lamp')
      expect(cached.body.data.createdAt).toBe(product.createdAt)
      expect(await listedNames()).toContain('Cached lamp')

      const patched = await server.api.patch(`/products/${product.id}`, {
        json: { price: 6 },
        token,
      })
      expect(patched.body.data.name).toBe('Changed behind the API')
      expect((await server.api.get(`/products/${product.id}`)).body.data).toEqual(patched.body.data)
      expect(await listedNames()).toContain('Changed behind the API')
    })

    it('says how long a public read may be kept, on 200 and 304 alike, and not on errors', async () => {
      const product = await create('Header lamp')
      const read = await server.api.get(`/products/${product.id}`)
      expect(read.headers.get('cache-control')).toBe(`public, max-age=${TTL_SECONDS}`)
      expect((await server.api.get('/products')).headers.get('cache-control')).toBe(
        `public, max-age=${TTL_SECONDS}`,
      )
      const revalidated = await server.api.get(`/products/${product.id}`, {
        headers: { 'if-none-match': read.headers.get('etag') as string },
      })
      expect(revalidated.status).toBe(304)
      expect(revalidated.headers.get('cache-control')).toBe(`public, max-age=${TTL_SECONDS}`)
      expect((await server.api.get('/products/999999')).headers.get('cache-control')).toBeNull()
    })
  })

  describe.runIf(redisUrl)('two instances sharing Redis', () => {
    let first: TestServer
    let second: TestServer
    let token: string
    const category = `shared-${backend.name}`

    beforeAll(async () => {
      const environment = { REDIS_URL: redisUrl as string, CACHE_TTL_SECONDS: TTL_SECONDS }
      first = await startServer(backend, environment)
      second = await startServer(backend, environment, { testDatabase: first.testDatabase })
      token = (await login(first.api, ADMIN)).accessToken
    })
    afterAll(async () => {
      await second?.close()
      await first?.close()
    })

    const readOnSecond = async (id: number) => {
      const [single, list] = await Promise.all([
        second.api.get(`/products/${id}`),
        second.api.get(`/products?category=${category}&limit=100`),
      ])
      return { single, list }
    }

    it('never answers the old product on one instance after a write through the other', async () => {
      const created = await first.api.post('/products', {
        json: { name: 'Round 0', price: 5, category },
        token,
      })
      const { id } = created.body.data
      for (let round = 1; round <= 15; round += 1) {
        // Reads in flight on the other instance while the write commits.
        const inFlight = Array.from({ length: 5 }, () => readOnSecond(id))
        const written = await first.api.patch(`/products/${id}`, {
          json: { name: `Round ${round}` },
          token,
        })
        expect(written.status).toBe(200)
        await Promise.all(inFlight)
        const { single, list } = await readOnSecond(id)
        expect(single.body.data).toEqual(written.body.data)
        expect(list.body.data.find((product: { id: number }) => product.id === id)).toEqual(
          written.body.data,
        )
      }
    })

    it('shows a product made on one instance, and its deletion, on the other at once', async () => {
      const before = await first.api.post('/products', {
        json: { name: 'Before', price: 5, category },
        token,
      })
      const nextId = before.body.data.id + 1
      expect((await second.api.get(`/products/${nextId}`)).status).toBe(404)
      const { total } = (await readOnSecond(nextId)).list.body.pagination

      const made = await first.api.post('/products', {
        json: { name: 'Made on the first', price: 5, category },
        token,
      })
      expect(made.body.data.id).toBe(nextId)
      const afterCreate = await readOnSecond(nextId)
      expect(afterCreate.single.body.data).toEqual(made.body.data)
      expect(afterCreate.list.body.pagination.total).toBe(total + 1)

      expect((await first.api.delete(`/products/${nextId}`, { token })).status).toBe(204)
      const afterDelete = await readOnSecond(nextId)
      expect(afterDelete.single.status).toBe(410)
      expect(afterDelete.list.body.pagination.total).toBe(total)
    })
  })

  describe('with CACHE_TTL_SECONDS=0', () => {
    let server: TestServer

    beforeAll(async () => {
      server = await startServer(backend, { CACHE_TTL_SECONDS: '0' })
    })
    afterAll(() => server?.close())

    it('reads the database every time, and has clients check their copy before using it', async () => {
      const token = (await login(server.api, ADMIN)).accessToken
      const created = await server.api.post('/products', {
        json: { name: 'Uncached', price: 5, category: 'uncached' },
        token,
      })
      const { id } = created.body.data
      expect((await server.api.get(`/products/${id}`)).body.data.name).toBe('Uncached')
      await renameBehindTheApi(server, id, 'Seen at once')
      const read = await server.api.get(`/products/${id}`)
      expect(read.body.data.name).toBe('Seen at once')
      expect(read.headers.get('cache-control')).toBe('public, no-cache')
    })
  })
})
