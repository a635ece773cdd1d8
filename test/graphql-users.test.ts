import { eq } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { posts, users } from '../src/db/schema.js'
import { backends } from './helpers/backends.js'
import { type GraphQLResponse, graphql } from './helpers/graphql.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'

const USER_FIELDS = 'id name email emailVerified age phoneNumber twoFactorEnabled'
const ME = `query { me { ${USER_FIELDS} } }`
const USER = `query User($id: ID!) { user(id: $id) { ${USER_FIELDS} } }`
const USER_POSTS = `query UserPosts($id: ID!, $limit: Int) {
  user(id: $id) { id posts(limit: $limit) { id title body createdAt author { id name email } } }
}`
const USERS = `query Users($ids: [ID!]!) { users(ids: $ids) { id name } }`
const USERS_WITH_POSTS = `query UsersWithPosts($ids: [ID!]!) {
  users(ids: $ids) { id name posts { title author { name } } }
}`

/** An id no row has, yet a valid int32. */
const UNKNOWN_ID = '2000000000'

type User = Awaited<ReturnType<typeof newUser>>
interface RestPost {
  id: number
  title: string
  body: string
  createdAt: string
}

const codesOf = (response: GraphQLResponse) =>
  (response.body.errors ?? []).map((error) => error.extensions?.code)

/** A statement on the users or posts tables: what reading users and their posts costs. */
const readsUsersOrPosts = (query: string) => /"(users|posts)"/.test(query)

describe.each(backends)('GraphQL users and posts on $name', (backend) => {
  let server: TestServer
  let admin: string
  let alice: User
  let bob: User
  // Every statement drizzle sends while `recording`; the server's own pollers (the
  // outbox) send some at any time, so only those on users and posts are counted.
  const statements: string[] = []
  let recording = false
  const logger = {
    logQuery(query: string) {
      if (recording) statements.push(query)
    },
  }

  const ask = (query: string, variables?: Record<string, unknown>, token?: string) =>
    graphql(server.baseUrl, query, variables, token)
  const written = async (user: User, title: string, body = '') => {
    const response = await server.api.post(`/users/${user.user.id}/posts`, {
      json: { title, body },
      token: user.accessToken,
    })
    expect(response.status, response.text).toBe(201)
    return response.body.data as RestPost
  }
  /** The statements on users and posts that `work` sends, and its result. */
  const counted = async <T>(work: () => Promise<T>) => {
    statements.length = 0
    recording = true
    try {
      const result = await work()
      return { result, statements: statements.filter(readsUsersOrPosts) }
    } finally {
      recording = false
    }
  }

  beforeAll(async () => {
    server = await startServer(backend, {}, { databaseLogger: logger })
    admin = (await login(server.api, ADMIN)).accessToken
    alice = await newUser(server.api)
    bob = await newUser(server.api)
    // Values the columns' defaults are not, so that hiding them cannot pass by chance.
    await server.testDatabase.database.db
      .update(users)
      .set({ phoneNumber: '+15550100', emailVerifiedAt: new Date(), twoFactorEnabled: true })
      .where(eq(users.id, alice.user.id))
  })
  afterAll(() => server?.close())

  describe('private fields', () => {
    const aliceAs = (sees: boolean) => ({
      id: String(alice.user.id),
      name: alice.user.name,
      email: sees ? alice.email : '',
      emailVerified: sees ? true : null,
      age: null,
      phoneNumber: sees ? '+15550100' : null,
      twoFactorEnabled: sees ? true : null,
    })

    it('me answers the caller, email and phone number included', async () => {
      const response = await ask(ME, {}, alice.accessToken)
      expect(response.body).toEqual({ data: { me: aliceAs(true) } })
    })

    it('me needs a token: UNAUTHENTICATED', async () => {
      const response = await ask(ME)
      expect(codesOf(response)).toEqual(['UNAUTHENTICATED'])
      expect(response.body.data?.me ?? null).toBeNull()
    })

    it.each([
      ['the user themself', () => alice.accessToken, true],
      ['an admin', () => admin, true],
      ['another user', () => bob.accessToken, false],
      ['an anonymous caller', () => undefined, false],
    ])('user(id) shows the private fields to %s: %s', async (_, token, sees) => {
      const response = await ask(USER, { id: String(alice.user.id) }, token())
      expect(response.body.errors).toBeUndefined()
      // To others: the email empty (it is String!), the rest null.
      expect(response.body.data.user).toEqual(aliceAs(sees))
    })

    it('hides the email of an author from another user, and shows one to the author', async () => {
      await written(alice, 'Visible author')
      const query = `query { users(ids: ["${alice.user.id}", "${bob.user.id}"]) {
        email posts(limit: 1) { author { email } }
      } }`
      const asBob = await ask(query, {}, bob.accessToken)
      expect(asBob.body.data.users[0]).toEqual({
        email: '',
        posts: [{ author: { email: '' } }],
      })
      expect(asBob.body.data.users[1].email).toBe(bob.email)
      const asAlice = await ask(query, {}, alice.accessToken)
      expect(asAlice.body.data.users[0]).toEqual({
        email: alice.email,
        posts: [{ author: { email: alice.email } }],
      })
      expect(asAlice.body.data.users[1].email).toBe('')
    })
  })

  describe('user(id)', () => {
    it.each([UNKNOWN_ID, 'abc', '0'])('fails NOT_FOUND for the id %s', async (id) => {
      const response = await ask(USER, { id }, admin)
      expect(codesOf(response)).toEqual(['NOT_FOUND'])
      expect(response.body.data?.user ?? null).toBeNull()
    })
  })

  describe('a deleted account', () => {
    let goneId: string
    beforeAll(async () => {
      const gone = await newUser(server.api)
      goneId = String(gone.user.id)
      const deleted = await server.api.delete(`/users/${goneId}`, { token: admin })
      expect(deleted.status, deleted.text).toBe(204)
    })

    it('fails user(id) NOT_FOUND, as GraphQL has no code for GONE', async () => {
      const response = await ask(USER, { id: goneId }, admin)
      expect(codesOf(response)).toEqual(['NOT_FOUND'])
      expect(response.body.data?.user ?? null).toBeNull()
    })

    it('answers null in users(ids), beside the accounts still there', async () => {
      const response = await ask(USERS, { ids: [goneId, String(bob.user.id)] })
      expect(response.body).toEqual({
        data: { users: [null, { id: String(bob.user.id), name: bob.user.name }] },
      })
    })
  })

  describe('posts', () => {
    let carol: User
    let titles: string[]

    beforeAll(async () => {
      carol = await newUser(server.api)
      titles = []
      for (let index = 1; index <= 22; index += 1) {
        titles.push((await written(carol, `Carol ${index}`, `Body ${index}`)).title)
      }
    })
    const postsOf = async (limit?: number) => {
      const response = await ask(USER_POSTS, { id: String(carol.user.id), limit })
      expect(response.body.errors).toBeUndefined()
      return response.body.data.user.posts as {
        id: string
        title: string
        body: string
        createdAt: string
        author: { id: string; name: string; email: string }
      }[]
    }

    it('lists the newest `limit` posts, newest first, as REST shows them', async () => {
      const three = await postsOf(3)
      expect(three.map((post) => post.title)).toEqual(titles.slice(-3).reverse())
      const rest = await server.api.get(`/users/${carol.user.id}/posts?limit=3`)
      expect(three).toEqual(
        (rest.body.data as RestPost[]).map((post) => ({
          id: String(post.id),
          title: post.title,
          body: post.body,
          createdAt: post.createdAt,
          author: { id: String(carol.user.id), name: carol.user.name, email: '' },
        })),
      )
    })

    it('lists 20 by default, and takes the bounds 1 and 100', async () => {
      expect((await postsOf()).map((post) => post.title)).toEqual(titles.slice(-20).reverse())
      expect(await postsOf(1)).toHaveLength(1)
      expect(await postsOf(100)).toHaveLength(22)
    })

    it.each([0, 101, -1])('refuses a limit of %s: BAD_USER_INPUT', async (limit) => {
      const response = await ask(USER_POSTS, { id: String(carol.user.id), limit })
      expect(codesOf(response)).toEqual(['BAD_USER_INPUT'])
      expect(response.body.data?.user ?? null).toBeNull()
    })

    it('answers an empty list for a user without posts', async () => {
      const quiet = await newUser(server.api)
      const response = await ask(USER_POSTS, { id: String(quiet.user.id) })
      expect(response.body.data.user.posts).toEqual([])
    })
  })

  describe('users(ids)', () => {
    it('answers in the order given, each id as often as named, null for unknown ids', async () => {
      const ids = [bob.user.id, UNKNOWN_ID, alice.user.id, 'abc', bob.user.id].map(String)
      const response = await ask(USERS, { ids })
      expect(response.body).toEqual({
        data: {
          users: [
            { id: String(bob.user.id), name: bob.user.name },
            null,
            { id: String(alice.user.id), name: alice.user.name },
            null,
            { id: String(bob.user.id), name: bob.user.name },
          ],
        },
      })
    })

    it.each([
      ['101 ids', 101],
      ['no ids', 0],
    ])('refuses %s: BAD_USER_INPUT', async (_, length) => {
      const ids = Array.from({ length }, () => String(alice.user.id))
      const response = await ask(USERS, { ids })
      expect(codesOf(response)).toEqual(['BAD_USER_INPUT'])
    })

    it('takes 100 ids', async () => {
      const ids = Array.from({ length: 100 }, () => String(alice.user.id))
      const response = await ask(USERS, { ids })
      expect(response.body.errors).toBeUndefined()
      expect(response.body.data.users).toHaveLength(100)
    })
  })

  describe('statements per query', () => {
    const POSTS_EACH = 3
    let seeded: { id: number; name: string }[]

    beforeAll(async () => {
      const { db } = server.testDatabase.database
      seeded = await db
        .insert(users)
        .values(
          Array.from({ length: 50 }, (_, index) => ({
            name: `Batched ${index}`,
            email: `batched-${index}-${Date.now()}@example.com`,
            passwordHash: 'never logs in',
            role: 'user' as const,
          })),
        )
        .returning({ id: users.id, name: users.name })
      await db.insert(posts).values(
        seeded.flatMap((user) =>
          Array.from({ length: POSTS_EACH }, (_, index) => ({
            userId: user.id,
            title: `${user.name} post ${index}`,
            body: '',
          })),
        ),
      )
    })

    const usersWithPosts = (of: { id: number; name: string }[]) =>
      counted(() => ask(USERS_WITH_POSTS, { ids: of.map((user) => String(user.id)) }))

    it('reads 50 users, their posts and each post author in 3 statements', async () => {
      const { result, statements } = await usersWithPosts(seeded)
      expect(result.body.errors).toBeUndefined()
      const answered = result.body.data.users as {
        id: string
        name: string
        posts: { title: string; author: { name: string } }[]
      }[]
      expect(answered.map((user) => user.id)).toEqual(seeded.map((user) => String(user.id)))
      for (const [index, user] of answered.entries()) {
        expect(user.name).toBe(seeded[index]?.name)
        // Inserted together, they share a createdAt: newest first is then the highest id.
        expect(user.posts.map((post) => post.title)).toEqual(
          [2, 1, 0].map((n) => `${user.name} post ${n}`),
        )
        expect(user.posts.every((post) => post.author.name === user.name)).toBe(true)
      }
      // The users by id, their posts (one lateral join), and the posts' authors by id.
      expect(statements, statements.join('\n')).toHaveLength(3)
    })

    it('costs the same for 5 users as for 50', async () => {
      const few = await usersWithPosts(seeded.slice(0, 5))
      const many = await usersWithPosts(seeded)
      expect(few.result.body.data.users).toHaveLength(5)
      expect(few.statements).toHaveLength(3)
      expect(many.statements).toHaveLength(few.statements.length)
    })

    it('reads one user in one statement', async () => {
      const { result, statements } = await counted(() =>
        ask(`query { user(id: "${seeded[0]?.id}") { name } }`),
      )
      expect(result.body.data.user.name).toBe(seeded[0]?.name)
      expect(statements).toHaveLength(1)
    })
  })
})
