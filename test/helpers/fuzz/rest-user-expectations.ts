import { eq } from 'drizzle-orm'
import { expect } from 'vitest'
import { posts } from '../../../src/db/schema.js'
import type { OperationId } from '../../../src/http/operations.js'
import { pageFigures, pageOf } from './orders-model.js'
import type { Expectation, ValidExchange } from './rest-expectations.js'
import { notModified } from './rest-order-expectations.js'
import {
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

/** Whether the caller may write the path user's posts; else the answer is 403, before all. */
function mayWrite(exchange: ValidExchange): boolean {
  const { response, world, caller, inputs } = exchange
  if (writesFor(viewerOf(world, caller), inputs.path.id)) return true
  expect(response.status, `another user's posts: ${response.text}`).toBe(403)
  return false
}

/** What the users' and posts' operations answer: profiles and posts public, writes the owner's. */
export const userExpectations = {
  getUser(exchange) {
    const user = pathUser(exchange)
    if (!user) return expect(exchange.response.status, exchange.response.text).toBe(404)
    if (notModified(exchange)) return
    expect(exchange.response.body.data).toEqual(profileOf(user))
  },

  listUserPosts(exchange) {
    const { response, inputs, before } = exchange
    const { page = 1, limit = 10 } = inputs.query as Record<string, any>
    const user = pathUser(exchange)
    if (!user) return expect(response.status, response.text).toBe(404)
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
    if (!user) return expect(response.status, response.text).toBe(404)
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
    if (!post) return expect(response.status, response.text).toBe(404)
    if (notModified(exchange)) return
    expect(response.body.data).toEqual(postOf(post))
  },

  async deleteUserPost(exchange) {
    const { response, inputs, before, world } = exchange
    if (!mayWrite(exchange)) return
    const post = postOfUser(before, inputs.path.id, inputs.path.postId)
    if (!post) return expect(response.status, response.text).toBe(404)
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
