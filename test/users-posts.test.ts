import { count } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { posts } from '../src/db/schema.js'
import { backends } from './helpers/backends.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'

interface Post {
  id: number
  userId: number
  title: string
  body: string
  createdAt: string
}
type User = Awaited<ReturnType<typeof newUser>>

/** An id no row has, yet a valid int32. */
const UNKNOWN_ID = 2_000_000_000
const INVALID_IDS = ['0', 'abc', '2147483648', '-1', '1.5']

describe.each(backends)('users and their posts over REST on $name', (backend) => {
  let server: TestServer
  let admin: string
  let alice: User
  let bob: User
  const api = () => server.api

  const write = (userId: number, json: object, token?: string) =>
    api().post(`/users/${userId}/posts`, { json, token })
  const written = async (user: User, json: object = { title: 'A post', body: 'Its text' }) => {
    const response = await write(user.user.id, json, user.accessToken)
    expect(response.status, response.text).toBe(201)
    return response.body.data as Post
  }
  const listOf = async (userId: number, query = '?limit=100') => {
    const response = await api().get(`/users/${userId}/posts${query}`)
    expect(response.status, response.text).toBe(200)
    return response.body as { data: Post[]; pagination: Record<string, unknown> }
  }
  /** Every post stored, whoever wrote it: a refusal must leave this alone. */
  const storedPosts = async () => {
    const [row] = await server.testDatabase.database.db.select({ total: count() }).from(posts)
    return row?.total
  }

  beforeAll(async () => {
    server = await startServer(backend)
    admin = (await login(server.api, ADMIN)).accessToken
    alice = await newUser(server.api)
    bob = await newUser(server.api)
  })
  afterAll(() => server?.close())

  describe('a profile', () => {
    it('shows id, name, age and createdAt to anyone, never email, role or password', async () => {
      const signUp = { name: 'Carol', email: `carol-${Date.now()}@example.com`, age: 33 }
      const created = await api().post('/users', {
        json: { ...signUp, password: 'carol-password-1' },
      })
      expect(created.status, created.text).toBe(201)
      const { id, createdAt } = created.body.data
      for (const token of [undefined, admin, alice.accessToken]) {
        const response = await api().get(`/users/${id}`, { token })
        expect(response.status, response.text).toBe(200)
        expect(response.body).toEqual({ data: { id, name: 'Carol', age: 33, createdAt } })
        expect(response.text).not.toContain(signUp.email)
      }
      expect((await api().get(`/users/${alice.user.id}`)).body.data).toEqual({
        id: alice.user.id,
        name: alice.user.name,
        age: null,
        createdAt: alice.user.createdAt,
      })
    })

    it('answers 404 NOT_FOUND for an unknown user', async () => {
      const response = await api().get(`/users/${UNKNOWN_ID}`)
      expect(response.status).toBe(404)
      expect(response.body.error.code).toBe('NOT_FOUND')
    })

    it('carries an ETag, and answers 304 with no body to If-None-Match', async () => {
      const first = await api().get(`/users/${bob.user.id}`)
      const etag = first.headers.get('etag')
      expect(etag).toBeTruthy()
      const again = await api().get(`/users/${bob.user.id}`, {
        headers: { 'if-none-match': etag as string },
      })
      expect(again.status).toBe(304)
      expect(again.text).toBe('')
    })
  })

  describe('writing a post', () => {
    it('answers 201 with the post and its Location, and the post reads back', async () => {
      const response = await write(
        alice.user.id,
        { title: 'Hello', body: 'First words' },
        alice.accessToken,
      )
      expect(response.status, response.text).toBe(201)
      const post = response.body.data as Post
      expect(post).toMatchObject({ userId: alice.user.id, title: 'Hello', body: 'First words' })
      expect(Number.isNaN(Date.parse(post.createdAt))).toBe(false)
      const location = response.headers.get('location')
      expect(location).toBe(`/users/${alice.user.id}/posts/${post.id}`)
      const read = await api().get(location as string)
      expect(read.status).toBe(200)
      expect(read.body.data).toEqual(post)
    })

    it('stores an empty body when none is given, and takes the longest title and body', async () => {
      expect((await written(alice, { title: 'No body' })).body).toBe('')
      const longest = { title: 't'.repeat(200), body: 'b'.repeat(10_000) }
      expect(await written(alice, longest)).toMatchObject(longest)
    })

    it("lets an admin write a user's post, in that user's name", async () => {
      const response = await write(bob.user.id, { title: 'By the admin' }, admin)
      expect(response.status, response.text).toBe(201)
      expect(response.body.data.userId).toBe(bob.user.id)
      expect((await listOf(bob.user.id)).data.map((post) => post.title)).toContain('By the admin')
    })

    it("refuses another user's post with 403, and stores nothing", async () => {
      const before = await listOf(alice.user.id)
      const stored = await storedPosts()
      const response = await write(alice.user.id, { title: 'Not mine' }, bob.accessToken)
      expect(response.status).toBe(403)
      expect(response.body.error.code).toBe('FORBIDDEN')
      expect(await listOf(alice.user.id)).toEqual(before)
      expect(await storedPosts()).toBe(stored)
    })

    it('needs a token (401), and stores nothing', async () => {
      const before = await listOf(alice.user.id)
      const response = await write(alice.user.id, { title: 'Anonymous' })
      expect(response.status).toBe(401)
      expect(response.body.error.code).toBe('UNAUTHENTICATED')
      expect(await listOf(alice.user.id)).toEqual(before)
    })

    it('answers 404 for an unknown user, even to an admin, and stores nothing', async () => {
      const stored = await storedPosts()
      const response = await write(UNKNOWN_ID, { title: 'Nobody' }, admin)
      expect(response.status).toBe(404)
      expect(response.body.error.code).toBe('NOT_FOUND')
      expect(await storedPosts()).toBe(stored)
    })

    it.each([
      ['a title of only spaces', { title: '    ' }, 'title'],
      ['a title of only whitespace', { title: ' \t\n ' }, 'title'],
      ['an empty title', { title: '' }, 'title'],
      ['a title of 201 characters', { title: 't'.repeat(201) }, 'title'],
      ['a body of 10001 characters', { title: 'Long', body: 'b'.repeat(10_001) }, 'body'],
      ['no title', { body: 'Only a body' }, 'title'],
      ['a title that is not a string', { title: 42 }, 'title'],
      ['a field it does not know', { title: 'Fine', published: true }, 'published'],
    ])('refuses %s with 400 VALIDATION_ERROR, and stores nothing', async (_, body, field) => {
      const before = await listOf(alice.user.id)
      const stored = await storedPosts()
      const response = await write(alice.user.id, body, alice.accessToken)
      expect(response.status, response.text).toBe(400)
      expect(response.body.error.code).toBe('VALIDATION_ERROR')
      expect(Object.keys(response.body.error.details).join()).toContain(field)
      expect(await listOf(alice.user.id)).toEqual(before)
      expect(await storedPosts()).toBe(stored)
    })

    it('refuses malformed JSON with 400 BAD_REQUEST, and stores nothing', async () => {
      const stored = await storedPosts()
      const response = await api().post(`/users/${alice.user.id}/posts`, {
        raw: '{"title": ',
        headers: { 'content-type': 'application/json' },
        token: alice.accessToken,
      })
      expect(response.status).toBe(400)
      expect(response.body.error.code).toBe('BAD_REQUEST')
      expect(await storedPosts()).toBe(stored)
    })
  })

  describe('listing', () => {
    let dave: User
    let titles: string[]

    beforeAll(async () => {
      dave = await newUser(server.api)
      titles = []
      for (let index = 1; index <= 25; index += 1) {
        titles.push((await written(dave, { title: `Post ${index}` })).title)
      }
    })

    it('pages newest first with the pagination figures', async () => {
      const first = await listOf(dave.user.id, '?page=1&limit=10')
      expect(first.pagination).toEqual({
        page: 1,
        limit: 10,
        total: 25,
        pages: 3,
        hasNext: true,
        hasPrev: false,
      })
      expect(first.data.map((post) => post.title)).toEqual(titles.slice(15).reverse())

      const last = await listOf(dave.user.id, '?page=3&limit=10')
      expect(last.pagination).toEqual({
        page: 3,
        limit: 10,
        total: 25,
        pages: 3,
        hasNext: false,
        hasPrev: true,
      })
      expect(last.data.map((post) => post.title)).toEqual(titles.slice(0, 5).reverse())

      const pages = [first, await listOf(dave.user.id, '?page=2&limit=10'), last]
      const all = pages.flatMap((page) => page.data)
      expect(all.map((post) => post.title)).toEqual([...titles].reverse())
      expect(new Set(all.map((post) => post.id)).size).toBe(25)
      expect(all.every((post) => post.userId === dave.user.id)).toBe(true)
    })

    it('defaults to page 1 of 10', async () => {
      const list = await listOf(dave.user.id, '')
      expect(list.data).toHaveLength(10)
      expect(list.pagination).toMatchObject({ page: 1, limit: 10, total: 25, pages: 3 })
    })

    it('answers a page past the last with empty data and true figures', async () => {
      const past = await listOf(dave.user.id, '?page=4&limit=10')
      expect(past).toEqual({
        data: [],
        pagination: { page: 4, limit: 10, total: 25, pages: 3, hasNext: false, hasPrev: true },
      })
    })

    it('lists a user without posts as an empty page', async () => {
      const quiet = await newUser(server.api)
      expect(await listOf(quiet.user.id, '')).toEqual({
        data: [],
        pagination: { page: 1, limit: 10, total: 0, pages: 0, hasNext: false, hasPrev: false },
      })
    })

    it('answers 404 NOT_FOUND for an unknown user', async () => {
      const response = await api().get(`/users/${UNKNOWN_ID}/posts`)
      expect(response.status).toBe(404)
      expect(response.body.error.code).toBe('NOT_FOUND')
    })

    it.each(['?limit=0', '?limit=101', '?page=0', '?page=abc'])(
      'refuses %s with 400 VALIDATION_ERROR',
      async (query) => {
        const response = await api().get(`/users/${dave.user.id}/posts${query}`)
        expect(response.status, response.text).toBe(400)
        expect(response.body.error.code).toBe('VALIDATION_ERROR')
      },
    )

    it('carries an ETag that changes with the list, and answers 304 while it holds', async () => {
      const path = `/users/${dave.user.id}/posts?limit=5`
      const etag = (await api().get(path)).headers.get('etag') as string
      expect(etag).toBeTruthy()
      const unchanged = await api().get(path, { headers: { 'if-none-match': etag } })
      expect(unchanged.status).toBe(304)
      expect(unchanged.text).toBe('')

      const newest = await written(dave, { title: 'Newest' })
      const changed = await api().get(path, { headers: { 'if-none-match': etag } })
      expect(changed.status).toBe(200)
      expect(changed.body.data[0]).toEqual(newest)
      expect(changed.headers.get('etag')).not.toBe(etag)
    })
  })

  describe('reading and deleting one post', () => {
    it('reads a post with an ETag and answers 304 to If-None-Match', async () => {
      const post = await written(alice, { title: 'Cached' })
      const path = `/users/${alice.user.id}/posts/${post.id}`
      const read = await api().get(path)
      expect(read.body).toEqual({ data: post })
      const etag = read.headers.get('etag') as string
      expect(etag).toBeTruthy()
      const again = await api().get(path, { headers: { 'if-none-match': etag } })
      expect(again.status).toBe(304)
      expect(again.text).toBe('')
    })

    it("answers 404 for another user's post under this user's path", async () => {
      const post = await written(alice, { title: "Alice's" })
      const read = await api().get(`/users/${bob.user.id}/posts/${post.id}`)
      expect(read.status).toBe(404)
      expect(read.body.error.code).toBe('NOT_FOUND')
      // Deleting it there is a 404 too, even for an admin, and the post stays.
      const deleted = await api().delete(`/users/${bob.user.id}/posts/${post.id}`, {
        token: admin,
      })
      expect(deleted.status).toBe(404)
      expect((await api().get(`/users/${alice.user.id}/posts/${post.id}`)).status).toBe(200)
    })

    it('answers 404 for an unknown post, and for a post of an unknown user', async () => {
      for (const path of [
        `/users/${alice.user.id}/posts/${UNKNOWN_ID}`,
        `/users/${UNKNOWN_ID}/posts/1`,
      ]) {
        const response = await api().get(path)
        expect(response.status, path).toBe(404)
        expect(response.body.error.code).toBe('NOT_FOUND')
      }
    })

    it('lets the author delete (204); the post is then gone (404) and off the list', async () => {
      const post = await written(alice, { title: 'Short-lived' })
      const path = `/users/${alice.user.id}/posts/${post.id}`
      const deleted = await api().delete(path, { token: alice.accessToken })
      expect(deleted.status).toBe(204)
      expect(deleted.text).toBe('')
      const read = await api().get(path)
      expect(read.status).toBe(404)
      expect(read.body.error.code).toBe('NOT_FOUND')
      expect((await listOf(alice.user.id)).data.map((each) => each.id)).not.toContain(post.id)
      expect((await api().delete(path, { token: alice.accessToken })).status).toBe(404)
    })

    it("lets an admin delete anyone's post (204)", async () => {
      const post = await written(bob, { title: 'Moderated' })
      const path = `/users/${bob.user.id}/posts/${post.id}`
      expect((await api().delete(path, { token: admin })).status).toBe(204)
      expect((await api().get(path)).status).toBe(404)
    })

    it('refuses another user (403) and no token (401), and the post stays', async () => {
      const post = await written(alice, { title: 'Kept' })
      const path = `/users/${alice.user.id}/posts/${post.id}`
      const before = await listOf(alice.user.id)
      const forbidden = await api().delete(path, { token: bob.accessToken })
      expect(forbidden.status).toBe(403)
      expect(forbidden.body.error.code).toBe('FORBIDDEN')
      const anonymous = await api().delete(path)
      expect(anonymous.status).toBe(401)
      expect(anonymous.body.error.code).toBe('UNAUTHENTICATED')
      expect((await api().get(path)).body.data).toEqual(post)
      expect(await listOf(alice.user.id)).toEqual(before)
    })
  })

  describe('invalid ids', () => {
    it.each(INVALID_IDS)('refuses the user id %s with 400 VALIDATION_ERROR', async (id) => {
      const stored = await storedPosts()
      const requests = [
        api().get(`/users/${id}`),
        api().get(`/users/${id}/posts`),
        api().post(`/users/${id}/posts`, { json: { title: 'x' }, token: admin }),
        api().get(`/users/${id}/posts/1`),
        api().delete(`/users/${id}/posts/1`, { token: admin }),
      ]
      for (const response of await Promise.all(requests)) {
        expect(response.status, response.text).toBe(400)
        expect(response.body.error.code).toBe('VALIDATION_ERROR')
      }
      expect(await storedPosts()).toBe(stored)
    })

    it.each(INVALID_IDS)('refuses the post id %s with 400 VALIDATION_ERROR', async (id) => {
      const path = `/users/${alice.user.id}/posts/${id}`
      for (const response of [await api().get(path), await api().delete(path, { token: admin })]) {
        expect(response.status, response.text).toBe(400)
        expect(response.body.error.code).toBe('VALIDATION_ERROR')
      }
    })
  })
})
