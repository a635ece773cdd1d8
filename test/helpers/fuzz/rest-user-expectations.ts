import { eq } from 'drizzle-orm'
import { expect } from 'vitest'
import { deletedUsers, posts, refreshTokens, users } from '../../../src/db/schema.js'
import type { OperationId } from '../../../src/http/operations.js'
import { pageFigures, pageOf } from './orders-model.js'
import type { Expectation, ValidExchange } from './rest-expectations.js'
import { notModified } from './rest-order-expectations.js'
import {
  fullUserOf,
  newestUsersFirst,
  type Post,
  postOf,
  postOfUser,
  postsOf,
  profileOf,
  viewerOf,
  writesFor,
} from './users-model.js'

/** The user of the path, as stored before the request. */
const pathUser = ({ before, inputs }: ValidExchange) => before.users.get(inputs.path.id as number)

/** Whether the caller may write the path user's posts or account; else the answer is 403, before all. */
function mayWrite(exchange: ValidExchange): boolean {
  const { response, world, caller, inputs } = exchange
  if (writesFor(viewerOf(world, caller), inputs.path.id)) return true
  expect(response.status, `another user's posts or account: ${response.text}`).toBe(403)
  return false
}

/** No user of the path: 410 for a deleted account's id, 404 for one never used. */
async function expectNoUser({ response, inputs, world }: ValidExchange) {
  const id = inputs.path.id as number
  const deleted = await world.db.$count(deletedUsers, eq(deletedUsers.id, id))
  expect(response.status, response.text).toBe(deleted > 0 ? 410 : 404)
  if (deleted > 0) expect(response.body.error.code).toBe('GONE')
}

/** No such post of the path's user: 404, or the user's own answer when they are not there. */
const expectNoPost = (exchange: ValidExchange) =>
  pathUser(exchange)
    ? expect(exchange.response.status, exchange.response.text).toBe(404)
    : expectNoUser(exchange)

const foldAscii = (text: string) => text.replace(/[A-Z]/g, (c) => c.toLowerCase())
/** ILIKE folds case by the database's locale: ASCII only under C, more under others. */
const containsIgnoringCase = (text: string, part: string) =>
  foldAscii(text).includes(foldAscii(part)) ||
  text.toLowerCase().includes(part.toLowerCase()) ||
  text.toUpperCase().includes(part.toUpperCase())

/** Whether the admins that are left after `id` is demoted or deleted are none. */
const lastAdmin = ({ before }: ValidExchange, id: number) =>
  before.users.get(id)?.role === 'admin' &&
  [...before.users.values()].filter((row) => row.role === 'admin').length <= 1

/** What the users' and posts' operations answer: profiles and posts public, writes the owner's. */
export const userExpectations = {
  listUsers(exchange) {
    const { response, inputs, before } = exchange
    const { page = 1, limit = 10, search } = inputs.query as Record<string, any>
    if (notModified(exchange)) return
    const { data, pagination } = response.body as { data: any[]; pagination: any }
    const listed = [...before.users.values()].sort(newestUsersFirst)
    expect(pagination).toEqual(pageFigures(page, limit, pagination.total))
    expect(pagination.total).toBeLessThanOrEqual(listed.length)
    if (search === undefined) expect(pagination.total).toBe(listed.length)
    const order = listed.map((row) => row.id)
    expect(
      data.map((user) => order.indexOf(user.id)),
      'newest first',
    ).toEqual(data.map((user) => order.indexOf(user.id)).sort((a, b) => a - b))
    for (const user of data) {
      const row = before.users.get(user.id)
      expect(row && fullUserOf(row), 'a user as stored').toEqual(user)
      if (search !== undefined) {
        expect(containsIgnoringCase(`${user.name}\n${user.email}`, search)).toBe(true)
      }
    }
    if (search === undefined) expect(data).toEqual(pageOf(listed, page, limit).map(fullUserOf))
  },

  async updateUser(exchange) {
    const { response, inputs, world } = exchange
    const id = inputs.path.id as number
    const changes = inputs.body as Record<string, unknown>
    if (!mayWrite(exchange)) return
    if (exchange.caller !== 'admin' && changes.role !== undefined) {
      return expect(response.status, `a role from a user: ${response.text}`).toBe(403)
    }
    const user = pathUser(exchange)
    if (!user) return expectNoUser(exchange)
    if (changes.role === 'user' && lastAdmin(exchange, id)) {
      return expect(response.status, `the last admin demoted: ${response.text}`).toBe(409)
    }
    expect(response.status, response.text).toBe(200)
    const expected = fullUserOf({ ...user, ...changes })
    expect(response.body.data).toEqual(expected)
    const [stored] = await world.db.select().from(users).where(eq(users.id, id))
    expect(stored && fullUserOf(stored), 'the account as stored').toEqual(expected)
    if (changes.role !== undefined && changes.role !== user.role) {
      const live = await world.db.select().from(refreshTokens).where(eq(refreshTokens.userId, id))
      expect(
        live.filter((token) => token.revokedAt === null),
        'a session left',
      ).toEqual([])
    }
  },

  async deleteUser(exchange) {
    const { response, inputs, world } = exchange
    const id = inputs.path.id as number
    if (!mayWrite(exchange)) return
    if (!pathUser(exchange)) return expectNoUser(exchange)
    if (lastAdmin(exchange, id)) {
      return expect(response.status, `the last admin deleted: ${response.text}`).toBe(409)
    }
    expect(response.status, response.text).toBe(204)
    expect(await world.db.$count(users, eq(users.id, id)), 'the account stayed').toBe(0)
    expect(await world.db.$count(deletedUsers, eq(deletedUsers.id, id)), 'its id kept').toBe(1)
    expect(await world.db.$count(posts, eq(posts.userId, id)), 'its posts stayed').toBe(0)
  },

  getUser(exchange) {
    const user = pathUser(exchange)
    if (!user) return expectNoUser(exchange)
    if (notModified(exchange)) return
    expect(exchange.response.body.data).toEqual(profileOf(user))
  },

  listUserPosts(exchange) {
    const { response, inputs, before } = exchange
    const { page = 1, limit = 10 } = inputs.query as Record<string, any>
    const user = pathUser(exchange)
    if (!user) return expectNoUser(exchange)
    if (notModified(exchange)) return
    const listed = postsOf(before, user.id)
    expect(response.body).toEqual({
      data: pageOf(listed, page, limit).map(postOf),
      pagination: pageFigures(page, limit, listed.length),
    })
  },

  async createUserPost(exchange) {
    const { response, inputs, before, world } = exchange
    if (!mayWrite(exchange)) return
    const user = pathUser(exchange)
    if (!user) return expectNoUser(exchange)
    expect(response.status, response.text).toBe(201)
    const { title, body = '' } = inputs.body as { title: string; body?: string }
    const post = response.body.data as Post
    expect(post).toMatchObject({ userId: user.id, title, body })
    expect(before.posts.has(post.id), 'a new post under an old id').toBe(false)
    expect(response.headers.get('location')).toBe(`/users/${user.id}/posts/${post.id}`)
    const [stored] = await world.db.select().from(posts).where(eq(posts.id, post.id))
    expect(stored && postOf(stored), 'the post as stored').toEqual(post)
  },

  getUserPost(exchange) {
    const { response, inputs, before } = exchange
    // Another user's post under this path is as none.
    const post = postOfUser(before, inputs.path.id, inputs.path.postId)
    if (!post) return expectNoPost(exchange)
    if (notModified(exchange)) return
    expect(response.body.data).toEqual(postOf(post))
  },

  async deleteUserPost(exchange) {
    const { response, inputs, before, world } = exchange
    if (!mayWrite(exchange)) return
    const post = postOfUser(before, inputs.path.id, inputs.path.postId)
    if (!post) return expectNoPost(exchange)
    expect(response.status, response.text).toBe(204)
    expect(await world.db.$count(posts, eq(posts.id, post.id)), 'deleted for good').toBe(0)
    expect(await world.db.$count(posts), 'one post deleted').toBe(before.posts.size - 1)
  },
} satisfies Partial<Record<OperationId, Expectation>>

/** Metric families getMetrics' description names: the `Metrics` figures, and the latency. */
const DOCUMENTED_METRICS = [
  'api_requests_per_second',
  'api_active_subscriptions',
  'api_connected_clients',
  'api_event_loop_delay_ms',
  'api_uptime_seconds',
  'http_request_duration_seconds',
]

/** A line of the Prometheus text format (0.0.4): a comment, or a sample. */
const SAMPLE_LINE =
  /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? \S+( -?\d+)?$/

/** An admin reads the metrics of this instance (the fuzz servers have no METRICS_TOKEN). */
export function expectMetrics({ response }: ValidExchange) {
  expect(response.status, response.text).toBe(200)
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
  const lines = response.text.split('\n').filter((line) => line !== '')
  for (const line of lines) {
    if (!line.startsWith('#')) expect(line, 'not a Prometheus sample').toMatch(SAMPLE_LINE)
  }
  const families = lines.flatMap((line) => line.match(/^# TYPE (\S+) /)?.[1] ?? [])
  expect(families).toEqual(expect.arrayContaining(DOCUMENTED_METRICS))
  expect(families.some((name) => name.startsWith('process_'))).toBe(true)
  expect(families.some((name) => name.startsWith('nodejs_'))).toBe(true)
}
