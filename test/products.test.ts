import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { ADMIN, login, startServer, type TestServer } from './helpers/server.js'

const valid = { name: 'Desk lamp', price: 19.99, category: 'lighting', stock: 5 }

describe.each(backends)('products on $name', (backend) => {
  let server: TestServer
  let token: string
  const api = () => server.api
  const create = async (body: object) => {
    const response = await api().post('/products', { json: body, token })
    expect(response.status, response.text).toBe(201)
    return response.body.data
  }
  const count = async () => (await api().get('/products?limit=1')).body.pagination.total

  beforeAll(async () => {
    server = await startServer(backend)
    token = (await login(server.api, ADMIN)).accessToken
  })
  afterAll(() => server?.close())

  describe('create', () => {
    it('stores a product and answers 201 with it and its location', async () => {
      const response = await api().post('/products', { json: valid, token })
      expect(response.status).toBe(201)
      const product = response.body.data
      expect(product).toMatchObject(valid)
      expect(Number.isInteger(product.id)).toBe(true)
      expect(new Date(product.createdAt).toISOString()).toBe(product.createdAt)
      expect(response.headers.get('location')).toBe(`/products/${product.id}`)
      expect((await api().get(`/products/${product.id}`)).body.data).toEqual(product)
    })

    it('defaults stock to 0', async () => {
      const { stock, ...withoutStock } = valid
      expect((await create(withoutStock)).stock).toBe(0)
    })

    it.each([
      ['name of 2 characters', { name: 'ab' }],
      ['name of 100 characters', { name: 'n'.repeat(100) }],
      ['stock of 0', { stock: 0 }],
      ['stock of 2^31 - 1, the int32 maximum', { stock: 2_147_483_647 }],
      ['the smallest price', { price: 0.01 }],
      // Read back through a double: every digit of numeric(12, 2) must survive.
      ['the largest price', { price: 9_999_999_999.99 }],
      ['price with every cent digit', { price: 1_234_567.89 }],
    ])('accepts a %s', async (_, change) => {
      expect(await create({ ...valid, ...change })).toMatchObject(change)
    })

    it.each([
      ['name of 1 character', { name: 'a' }, 'name'],
      ['name of 101 characters', { name: 'n'.repeat(101) }, 'name'],
      ['price of 0', { price: 0 }, 'price'],
      ['negative price', { price: -5 }, 'price'],
      ['price below the cent', { price: 1.001 }, 'price'],
      ['price as a string', { price: '12' }, 'price'],
      ['stock of -1', { stock: -1 }, 'stock'],
      ['stock of 1.5', { stock: 1.5 }, 'stock'],
      ['stock of 2^31, past int32', { stock: 2_147_483_648 }, 'stock'],
      ['empty category', { category: '' }, 'category'],
      ['unknown field', { colour: 'red' }, 'colour'],
    ])('rejects a %s with VALIDATION_ERROR and stores nothing', async (_, change, field) => {
      const before = await count()
      const response = await api().post('/products', { json: { ...valid, ...change }, token })
      expect(response.status).toBe(400)
      expect(response.body.error.code).toBe('VALIDATION_ERROR')
      expect(Object.keys(response.body.error.details)).toEqual([field])
      expect(await count()).toBe(before)
    })

    it('reports every failing field at once, and the missing ones', async () => {
      const response = await api().post('/products', { json: { name: 'x', stock: -1 }, token })
      expect(response.status).toBe(400)
      expect(response.body.error.details).toEqual({
        name: [expect.any(String)],
        stock: [expect.any(String)],
        price: ['is required'],
        category: ['is required'],
      })
    })
  })

  describe('read', () => {
    it.each(['abc', '1.5', '0', '-3', '99999999999'])('answers 400 for the id %s', async (id) => {
      const response = await api().get(`/products/${id}`)
      expect(response.status).toBe(400)
      expect(response.body.error.message).toEqual(expect.any(String))
    })

    it('answers 404 for an id that never existed', async () => {
      const response = await api().get('/products/2147483647')
      expect(response.status).toBe(404)
      expect(response.body.error).toMatchObject({ code: 'NOT_FOUND' })
    })

    it('answers 400 VALIDATION_ERROR for an id past int32, 2^31', async () => {
      const response = await api().get('/products/2147483648')
      expect(response.status).toBe(400)
      expect(response.body.error.code).toBe('VALIDATION_ERROR')
      expect(Object.keys(response.body.error.details)).toEqual(['id'])
    })
  })

  describe('update', () => {
    it('changes only the given fields', async () => {
      const product = await create(valid)
      const response = await api().patch(`/products/${product.id}`, {
        json: { price: 25, stock: 0 },
        token,
      })
      expect(response.status).toBe(200)
      expect(response.body.data).toMatchObject({ ...valid, price: 25, stock: 0, id: product.id })
      expect(response.body.data.createdAt).toBe(product.createdAt)
      expect(response.body.data.updatedAt >= product.updatedAt).toBe(true)
    })

    it.each([
      ['name of 1 character', { name: 'a' }],
      ['price of 0', { price: 0 }],
      ['stock of -1', { stock: -1 }],
      ['stock of 1.5', { stock: 1.5 }],
      ['stock of 2^31', { stock: 2_147_483_648 }],
      ['unknown field', { id: 7 }],
      ['empty body', {}],
    ])('rejects a %s and changes nothing', async (_, change) => {
      const product = await create(valid)
      const response = await api().patch(`/products/${product.id}`, { json: change, token })
      expect(response.status).toBe(400)
      expect(response.body.error.code).toBe('VALIDATION_ERROR')
      expect((await api().get(`/products/${product.id}`)).body.data).toEqual(product)
    })

    it('answers 404 for a missing product', async () => {
      const response = await api().patch('/products/2147483646', { json: { stock: 1 }, token })
      expect(response.status).toBe(404)
    })
  })

  describe('replace', () => {
    it('sets every field as a create does, stock left out back to 0', async () => {
      const product = await create(valid)
      const replacement = { name: 'Floor lamp', price: 42.5, category: 'floors' }
      const response = await api().put(`/products/${product.id}`, { json: replacement, token })
      expect(response.status, response.text).toBe(200)
      expect(response.body.data).toMatchObject({ ...replacement, stock: 0, id: product.id })
      expect(response.body.data.createdAt).toBe(product.createdAt)
      expect(response.body.data.updatedAt >= product.updatedAt).toBe(true)
      expect((await api().get(`/products/${product.id}`)).body.data).toEqual(response.body.data)
    })

    it.each([
      ['missing name', { name: undefined }, 'name'],
      ['missing price', { price: undefined }, 'price'],
      ['missing category', { category: undefined }, 'category'],
      ['name of 1 character', { name: 'a' }, 'name'],
      ['blank category', { category: '   ' }, 'category'],
      ['price below the cent', { price: 1.001 }, 'price'],
      ['stock of -1', { stock: -1 }, 'stock'],
      ['unknown field', { colour: 'red' }, 'colour'],
      ['an id, which only the service sets', { id: 7 }, 'id'],
    ])('rejects a %s with VALIDATION_ERROR and changes nothing', async (_, change, field) => {
      const product = await create(valid)
      const response = await api().put(`/products/${product.id}`, {
        json: { ...valid, ...change },
        token,
      })
      expect(response.status).toBe(400)
      expect(response.body.error.code).toBe('VALIDATION_ERROR')
      expect(Object.keys(response.body.error.details)).toEqual([field])
      expect((await api().get(`/products/${product.id}`)).body.data).toEqual(product)
    })

    it('creates nothing: an id never used answers 404, a deleted product 410', async () => {
      const before = await count()
      const unknown = await api().put('/products/2147483644', { json: valid, token })
      expect(unknown.status).toBe(404)
      expect(unknown.body.error.code).toBe('NOT_FOUND')
      const product = await create(valid)
      await api().delete(`/products/${product.id}`, { token })
      const deleted = await api().put(`/products/${product.id}`, { json: valid, token })
      expect(deleted.status).toBe(410)
      expect(deleted.body.error.code).toBe('GONE')
      expect(await count()).toBe(before)
    })
  })

  describe('delete', () => {
    it('answers 204, then 410 on GET, PATCH and DELETE', async () => {
      const product = await create(valid)
      const deleted = await api().delete(`/products/${product.id}`, { token })
      expect(deleted.status).toBe(204)
      expect(deleted.text).toBe('')
      for (const response of [
        await api().get(`/products/${product.id}`),
        await api().patch(`/products/${product.id}`, { json: { stock: 1 }, token }),
        await api().delete(`/products/${product.id}`, { token }),
      ]) {
        expect(response.status).toBe(410)
        expect(response.body.error.code).toBe('GONE')
      }
    })

    it('leaves the list', async () => {
      const product = await create({ ...valid, category: 'to-delete' })
      await api().delete(`/products/${product.id}`, { token })
      expect((await api().get('/products?category=to-delete')).body.pagination.total).toBe(0)
    })

    it('answers 404 for a product that never existed', async () => {
      expect((await api().delete('/products/2147483645', { token })).status).toBe(404)
    })
  })
})
