import { randomBytes } from 'node:crypto'
import { asc } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { users } from '../src/db/schema.js'
import { backends } from './helpers/backends.js'
import { ADMIN, login, startServer, type TestServer } from './helpers/server.js'

/**
 * An admin's list of accounts (GET /users) and the changes an account takes
 * (PATCH /users/{id}), DESIGN.md §11: who may do what, and that a refusal changes nothing.
 */

const PASSWORD = 'account-password-1'

interface FullUser {
  id: number
  name: string
  email: string
  role: 'user' | 'admin'
  age: number | null
  phoneNumber: string | null
  emailVerified: boolean
  twoFactorEnabled: boolean
  createdAt: string
}

describe.each(backends)('the accounts an admin lists, and their changes, on $name', (backend) => {
  let server: TestServer
  let admin: string
  // A word in every name of this file's accounts, so that a search finds them alone.
  const tag = `acct${randomBytes(4).toString('hex')}`
  let made = 0
  const api = () => server.api

  /** Signs up an account named `<tag> <name>` and logs it in. */
  async function account(name: string) {
    made += 1
    const email = `${tag}-${made}@Example.com`
    const created = await api().post('/users', {
      json: { name: `${tag} ${name}`, email, password: PASSWORD },
    })
    expect(created.status, created.text).toBe(201)
    const tokens = await login(api(), { email, password: PASSWORD })
    return { user: created.body.data as FullUser, email, ...tokens }
  }
  type Account = Awaited<ReturnType<typeof account>>

  const list = (query: string, token = admin) => api().get(`/users${query}`, { token })
  const patch = (id: number | string, json: unknown, token: string) =>
    api().patch(`/users/${id}`, { json, token })
  /** Every account as stored: what a refused request must leave as it was. */
  const stored = () => server.testDatabase.database.db.select().from(users).orderBy(asc(users.id))

  let alice: Account
  let bob: Account
  let percent: Account

  beforeAll(async () => {
    server = await startServer(backend)
    admin = (await login(server.api, ADMIN)).accessToken
    alice = await account('Alice')
    bob = await account('Bob')
    percent = await account('100%_sure')
  })
  afterAll(() => server?.close())

  describe('GET /users', () => {
    it('pages every account newest first, each whole, in the list envelope', async () => {
      const response = await list(`?search=${tag}&limit=2`)
      expect(response.status, response.text).toBe(200)
      expect(response.body.pagination).toEqual({
        page: 1,
        limit: 2,
        total: 3,
        pages: 2,
        hasNext: true,
        hasPrev: false,
      })
      expect(response.body.data).toEqual([percent.user, bob.user])
      expect(response.body.data[0]).toMatchObject({
        email: percent.email,
        role: 'user',
        emailVerified: false,
        twoFactorEnabled: false,
        phoneNumber: null,
      })
      const second = await list(`?search=${tag}&limit=2&page=2`)
      expect(second.body.data).toEqual([alice.user])
      const past = await list(`?search=${tag}&limit=2&page=3`)
      expect(past.body).toEqual({
        data: [],
        pagination: { page: 3, limit: 2, total: 3, pages: 2, hasNext: false, hasPrev: true },
      })
    })

    it('pages as the products do: 10 by default, without a search every account', async () => {
      const response = await list('')
      expect(response.status).toBe(200)
      expect(response.body.pagination).toMatchObject({ page: 1, limit: 10 })
      expect(response.body.pagination.total).toBe((await stored()).length)
      expect((await list('?limit=101')).status).toBe(400)
      expect((await list('?page=0')).status).toBe(400)
    })

    it('searches names and emails regardless of case', async () => {
      const byName = await list(`?search=${tag.toUpperCase()}%20ALICE`)
      expect(byName.body.data).toEqual([alice.user])
      const byEmail = await list(`?search=${tag}-2@EXAMPLE`)
      expect(byEmail.body.data).toEqual([bob.user])
    })

    it('matches % and _ literally', async () => {
      expect((await list(`?search=${encodeURIComponent('0%_s')}`)).body.data).toEqual([
        percent.user,
      ])
      expect((await list(`?search=${tag}%25`)).body.data).toEqual([])
      expect((await list(`?search=${tag}_`)).body.data).toEqual([])
    })

    it('refuses a user (403) and a caller without a token (401)', async () => {
      const asUser = await list('', alice.accessToken)
      expect(asUser.status).toBe(403)
      expect(asUser.body.error.code).toBe('FORBIDDEN')
      const anonymous = await api().get('/users')
      expect(anonymous.status).toBe(401)
      expect(anonymous.body.error.code).toBe('UNAUTHENTICATED')
    })
  })

  describe('PATCH /users/{id}', () => {
    it('changes the name, age and phone number of the caller, and clears them with null', async () => {
      const changed = await patch(
        alice.user.id,
        { name: 'Alice Renamed', age: 41, phoneNumber: '+447911123456' },
        alice.accessToken,
      )
      expect(changed.status, changed.text).toBe(200)
      expect(changed.body.data).toEqual({
        ...alice.user,
        name: 'Alice Renamed',
        age: 41,
        phoneNumber: '+447911123456',
      })
      const profile = await api().get(`/users/${alice.user.id}`)
      expect(profile.body.data).toMatchObject({ name: 'Alice Renamed', age: 41 })
      const cleared = await patch(
        alice.user.id,
        { age: null, phoneNumber: null },
        alice.accessToken,
      )
      expect(cleared.body.data).toMatchObject({ age: null, phoneNumber: null })
      const [row] = (await stored()).filter((each) => each.id === alice.user.id)
      expect(row).toMatchObject({ name: 'Alice Renamed', age: null, phoneNumber: null })
    })

    it("lets an admin change another account's fields, and leaves its sessions", async () => {
      const carol = await account('Carol')
      const changed = await patch(carol.user.id, { name: 'Carol by admin', role: 'user' }, admin)
      expect(changed.status, changed.text).toBe(200)
      expect(changed.body.data).toMatchObject({ name: 'Carol by admin', role: 'user' })
      const refreshed = await api().post('/auth/refresh', {
        json: { refreshToken: carol.refreshToken },
      })
      expect(refreshed.status, 'the same role is no change of role').toBe(200)
    })

    it("changes a role by an admin's hand, and ends every session of the account", async () => {
      const dave = await account('Dave')
      const promoted = await patch(dave.user.id, { role: 'admin' }, admin)
      expect(promoted.status, promoted.text).toBe(200)
      expect(promoted.body.data.role).toBe('admin')
      const refreshed = await api().post('/auth/refresh', {
        json: { refreshToken: dave.refreshToken },
      })
      expect(refreshed.status).toBe(401)
      const relogged = await login(api(), { email: dave.email, password: PASSWORD })
      expect((await list('', relogged.accessToken)).status, 'an admin now').toBe(200)
      expect((await patch(dave.user.id, { role: 'user' }, admin)).body.data.role).toBe('user')
    })

    describe('refuses, in the envelope, and changes nothing', () => {
      it.each([
        ['a phone number not in E.164', { phoneNumber: '0044 7911 123456' }, 'phoneNumber'],
        ['a phone number with a leading 0', { phoneNumber: '+0447911123456' }, 'phoneNumber'],
        ['a phone number of 16 digits', { phoneNumber: '+1234567890123456' }, 'phoneNumber'],
        ['an age above 150', { age: 151 }, 'age'],
        ['a negative age', { age: -1 }, 'age'],
        ['a name of spaces', { name: '   ' }, 'name'],
        ['a name of 101 characters', { name: 'x'.repeat(101) }, 'name'],
        ['a role that is none', { role: 'root' }, 'role'],
      ])('%s: 400 VALIDATION_ERROR', async (_, body, field) => {
        const before = await stored()
        const response = await patch(bob.user.id, body, bob.accessToken)
        expect(response.status, response.text).toBe(400)
        expect(response.body.error.code).toBe('VALIDATION_ERROR')
        expect(Object.keys(response.body.error.details)).toContain(field)
        expect(await stored()).toEqual(before)
      })

      it.each([
        ['a field it does not take', { name: 'Bob', email: 'taken@example.com' }],
        ['no field at all', {}],
      ])('%s: 400', async (_, body) => {
        const before = await stored()
        const response = await patch(bob.user.id, body, bob.accessToken)
        expect(response.status, response.text).toBe(400)
        expect(['VALIDATION_ERROR', 'BAD_REQUEST']).toContain(response.body.error.code)
        expect(await stored()).toEqual(before)
      })

      it('a role from a user, even with other fields and their own role: 403', async () => {
        const before = await stored()
        for (const role of ['admin', 'user']) {
          const response = await patch(bob.user.id, { name: 'Bob', role }, bob.accessToken)
          expect(response.status, response.text).toBe(403)
          expect(response.body.error.code).toBe('FORBIDDEN')
        }
        expect(await stored()).toEqual(before)
      })

      it("another user's account: 403", async () => {
        const before = await stored()
        const response = await patch(alice.user.id, { name: 'Not yours' }, bob.accessToken)
        expect(response.status).toBe(403)
        expect(response.body.error.code).toBe('FORBIDDEN')
        expect(await stored()).toEqual(before)
      })

      it('an id that is not a number: 400; no token: 401; an id never used: 404', async () => {
        const before = await stored()
        const notANumber = await patch('bob', { name: 'Bob' }, admin)
        expect(notANumber.status).toBe(400)
        expect(notANumber.body.error.code).toBe('VALIDATION_ERROR')
        const anonymous = await api().patch(`/users/${bob.user.id}`, { json: { name: 'Bob' } })
        expect(anonymous.status).toBe(401)
        const unknown = await patch(2_000_000_000, { name: 'Nobody' }, admin)
        expect(unknown.status).toBe(404)
        expect(unknown.body.error.code).toBe('NOT_FOUND')
        expect(await stored()).toEqual(before)
      })
    })
  })

  // Last: one of the two admins ends up a user.
  describe('the last admin', () => {
    it('cannot be made a user: 409 CONFLICT, and nothing changes', async () => {
      const [configured] = (await stored()).filter((each) => each.email === ADMIN.email)
      const before = await stored()
      const response = await patch(configured?.id ?? 0, { role: 'user' }, admin)
      expect(response.status, response.text).toBe(409)
      expect(response.body.error.code).toBe('CONFLICT')
      expect(await stored()).toEqual(before)
    })

    it('is kept when two admins demote each other at once: one wins, one is refused', async () => {
      const erin = await account('Erin')
      expect((await patch(erin.user.id, { role: 'admin' }, admin)).status).toBe(200)
      const erinAdmin = (await login(api(), { email: erin.email, password: PASSWORD })).accessToken
      const [configured] = (await stored()).filter((each) => each.email === ADMIN.email)
      const answers = await Promise.all([
        patch(erin.user.id, { role: 'user' }, admin),
        patch(configured?.id ?? 0, { role: 'user' }, erinAdmin),
      ])
      // The loser is refused as the last admin (409), or, when the winner's change has
      // ended its sessions before its own request is let in, as a token of an ended
      // session (401).
      const [won, lost] = answers.map((each) => each.status).sort()
      expect(won).toBe(200)
      expect([401, 409]).toContain(lost)
      const admins = (await stored()).filter((each) => each.role === 'admin')
      expect(admins).toHaveLength(1)
    })
  })
})
