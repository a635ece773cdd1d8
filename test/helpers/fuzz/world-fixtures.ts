import type { Database } from '../../../src/db/database.js'
import { messages, posts, users } from '../../../src/db/schema.js'
import type { Api } from '../api.js'
import type { Tokens } from './callers.js'

/**
 * Orders to read, move and cancel, one in each of three statuses; the changes notify
 * their owners, so each account has a notification too (GraphQL places no orders).
 */
export async function placeOrders(api: Api, tokens: Tokens, productId: number): Promise<number[]> {
  const expectStatus = (response: { status: number; text: string }, status: number) => {
    if (response.status !== status) throw new Error(`an order fixture failed: ${response.text}`)
  }
  const place = async (token: string) => {
    const placed = await api.post('/orders', {
      json: { items: [{ productId, quantity: 1 }] },
      token,
    })
    expectStatus(placed, 201)
    return placed.body.data.id as number
  }
  const pending = await place(tokens.user)
  const paid = await place(tokens.user)
  const cancelled = await place(tokens.admin)
  const pay = { json: { status: 'PAID' }, token: tokens.admin }
  expectStatus(await api.patch(`/orders/${paid}`, pay), 200)
  expectStatus(await api.post(`/orders/${cancelled}/cancel`, { token: tokens.admin }), 200)
  return [pending, paid, cancelled]
}

/** Posts for lists to page and for GraphQL's `User.posts` to cut short, one without a body. */
export async function writePosts(api: Api, userId: number, token: string, count: number) {
  const written: [number, number][] = []
  for (let made = 0; made < count; made += 1) {
    const post = { title: `Fuzz post ${made + 1}`, ...(made > 0 && { body: 'A fixture.' }) }
    const created = await api.post(`/users/${userId}/posts`, { json: post, token })
    if (created.status !== 201) throw new Error(`a post fixture failed: ${created.text}`)
    written.push([userId, created.body.data.id])
  }
  return written
}

const BOUNDARY = 'fuzz-fixture-boundary'

/** Files to list, read and delete: the harness sends JSON only, so they are stored here. */
export async function storeFiles(baseUrl: string, token: string, count: number) {
  const stored: number[] = []
  for (let made = 0; made < count; made += 1) {
    const response = await fetch(`${baseUrl}/upload`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
      },
      body: `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="fixture-${made}.txt"\r\nContent-Type: text/plain\r\n\r\nA fixture.\r\n--${BOUNDARY}--\r\n`,
    })
    const text = await response.text()
    if (response.status !== 201) throw new Error(`an upload fixture failed: ${text}`)
    stored.push((JSON.parse(text) as { data: { id: number } }).data.id)
  }
  return stored
}

/** Accounts no caller holds a token of, stored directly, each with a post to go with it. */
export async function storeSpares(db: Database, count: number): Promise<number[]> {
  const stamp = Date.now()
  const spares = await db
    .insert(users)
    .values(
      Array.from({ length: count }, (_, index) => ({
        name: `Spare ${index}`,
        email: `spare-${index}-${stamp}@example.com`,
        passwordHash: 'never logs in',
      })),
    )
    .returning({ id: users.id })
  await db
    .insert(posts)
    .values(spares.map(({ id }) => ({ userId: id, title: 'A spare post', body: '' })))
  return spares.map(({ id }) => id)
}

/** The chat whose messages `messageAdded(chatId, after)` resumes after, stored directly. */
export async function storeChat(db: Database, chatId: string, count: number): Promise<number[]> {
  const stored = await db
    .insert(messages)
    .values(
      Array.from({ length: count }, (_, index) => ({ chatId, text: `m${index}`, author: 'fuzz' })),
    )
    .returning({ id: messages.id })
  return stored.map(({ id }) => id)
}
