import { randomUUID } from 'node:crypto'
import { count, eq, sql } from 'drizzle-orm'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { messages, notifications } from '../src/db/schema.js'
import { rowsOf } from '../src/db/statement-rows.js'
import { chatTopics } from '../src/domains/chat/chat-topics.js'
import { createMessagesRepository } from '../src/domains/chat/messages-repository.js'
import { backends } from './helpers/backends.js'
import { collect, graphql, subscriptionsActive, wsClient } from './helpers/graphql.js'
import {
  LEGACY_WS,
  type RawSubscription,
  rawSubscription,
  type Subprotocol,
  TRANSPORT_WS,
} from './helpers/raw-subscription.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'

/**
 * Subscriptions a client resumes after a lost connection: `after` replays what followed
 * it from the database, then the live events, none twice and none missed; live events
 * come in id order whatever order the bus brings them in.
 */

const MESSAGE_ADDED = `subscription Resume($chatId: ID, $after: ID) {
  messageAdded(chatId: $chatId, after: $after) { id chatId text }
}`
const NOTIFICATION_ADDED = `subscription Resume($after: ID) {
  notificationAdded(after: $after) { id title }
}`
const SEND = `mutation Send($text: String!, $chatId: ID!) {
  sendMessage(text: $text, author: "resumer", chatId: $chatId) { id }
}`
const PROTOCOLS: Subprotocol[] = [TRANSPORT_WS, LEGACY_WS]

interface Added {
  messageAdded: { id: string; chatId: string; text: string }
}
interface Notified {
  notificationAdded: { id: string; title: string }
}

const freshChat = () => `resume-${randomUUID()}`

describe.each(backends)('resumable subscriptions on $name', (backend) => {
  let server: TestServer
  let admin: string
  let productId: number
  const subscriptions: RawSubscription<unknown>[] = []
  const db = () => server.testDatabase.database.db

  beforeAll(async () => {
    server = await startServer(backend)
    admin = (await login(server.api, ADMIN)).accessToken
    const product = await server.api.post('/products', {
      json: { name: 'Resumed lamp', price: 4, category: 'resume', stock: 100_000 },
      token: admin,
    })
    productId = product.body.data.id
    return () => server?.close()
  })
  afterEach(async () => {
    for (const subscription of subscriptions.splice(0)) subscription.kill()
    await expect.poll(() => server.events.activeSubscriptions()).toBe(0)
  })

  async function subscribe<Data>(
    protocol: Subprotocol,
    query: string,
    variables: Record<string, unknown>,
    token?: string,
  ) {
    const subscription = await rawSubscription<Data>(
      server.baseUrl,
      protocol,
      { query, variables },
      token,
    )
    subscriptions.push(subscription)
    return subscription
  }

  async function send(text: string, chatId: string): Promise<string> {
    const response = await graphql(server.baseUrl, SEND, { text, chatId })
    expect(response.body.errors, JSON.stringify(response.body)).toBeUndefined()
    return response.body.data.sendMessage.id
  }

  /** `total` messages stored in the chat at once (no events): their ids, ascending. */
  async function stored(chatId: string, total: number): Promise<number[]> {
    const rows = rowsOf<{ id: number }>(
      await db().execute(sql`insert into messages (chat_id, text, author)
        select ${chatId}, 'stored ' || n, 'bulk' from generate_series(1, ${total}::int) as n
        returning id`),
    )
    return rows.map((row) => Number(row.id)).sort((a, b) => a - b)
  }

  const messageCount = async () => (await db().select({ n: count() }).from(messages))[0]?.n

  const textsOf = (items: Added[]) => items.map((item) => item.messageAdded.text)
  const idsOf = (items: Added[]) => items.map((item) => Number(item.messageAdded.id))

  describe.each(PROTOCOLS)('messageAdded(chatId, after) over %s', (protocol) => {
    it('replays what followed `after`, oldest first, then goes on live, none twice', async () => {
      const chatId = freshChat()
      const ids = []
      for (const text of ['one', 'two', 'three', 'four', 'five']) ids.push(await send(text, chatId))
      await send('elsewhere', freshChat())

      const resumed = await subscribe<Added>(protocol, MESSAGE_ADDED, { chatId, after: ids[1] })
      expect(textsOf(await resumed.until(3))).toEqual(['three', 'four', 'five'])
      await send('six', chatId)
      await send('seven', chatId)

      const received = await resumed.until(5)
      expect(textsOf(received)).toEqual(['three', 'four', 'five', 'six', 'seven'])
      expect(idsOf(received)).toEqual([...idsOf(received)].sort((a, b) => a - b))
      // A barrier: a repeat of any of them would have come before it.
      await send('barrier', chatId)
      expect(textsOf(await resumed.until(6)).at(-1)).toBe('barrier')
      expect(resumed.items).toHaveLength(6)
      expect(resumed.errors).toEqual([])
    })

    it('replays exactly 1000 messages, and refuses 1001 with BAD_USER_INPUT before any', async () => {
      const chatId = freshChat()
      const [oldest, first, ...rest] = await stored(chatId, 1002)
      const longest = await subscribe<Added>(protocol, MESSAGE_ADDED, { chatId, after: first })
      const replayed = await longest.until(1000)
      expect(idsOf(replayed)).toEqual(rest)

      const tooLong = await subscribe<Added>(protocol, MESSAGE_ADDED, {
        chatId,
        after: oldest,
      })
      const [refusal, ...others] = await tooLong.settled()
      expect(others).toEqual([])
      expect(refusal?.extensions).toMatchObject({
        code: 'BAD_USER_INPUT',
        details: { after: [expect.stringContaining('more than 1000 messages')] },
      })
      expect(tooLong.items).toEqual([])
      await send('after the refusal', chatId)
      expect(textsOf(await longest.until(1001)).at(-1)).toBe('after the refusal')
      expect(tooLong.items).toEqual([])
    })
  })

  describe('an `after` that is not a message of the chat', () => {
    let chatId: string
    let ownId: string
    let otherChatsId: string
    beforeAll(async () => {
      chatId = freshChat()
      ownId = await send('mine', chatId)
      otherChatsId = await send('theirs', freshChat())
    })

    it.each([
      ["another chat's message", () => ({ chatId, after: otherChatsId })],
      ['an id no message has', () => ({ chatId, after: '2147483647' })],
      ['not an integer', () => ({ chatId, after: 'abc' })],
      ['zero', () => ({ chatId, after: '0' })],
      ['a fraction', () => ({ chatId, after: '1.5' })],
      ['beyond an int4', () => ({ chatId, after: '2147483648' })],
      ['without chatId', () => ({ after: ownId })],
    ])('is refused with BAD_USER_INPUT naming after, following nothing: %s', async (_, given) => {
      const before = await messageCount()
      for (const protocol of PROTOCOLS) {
        const refused = await subscribe<Added>(protocol, MESSAGE_ADDED, given())
        const errors = await refused.settled()
        expect(errors.map((error) => error.extensions?.code)).toEqual(['BAD_USER_INPUT'])
        expect(Object.keys(errors[0]?.extensions?.details ?? {})).toEqual(['after'])
        expect(refused.items).toEqual([])
      }
      expect(await messageCount()).toBe(before)
      await expect.poll(() => server.events.activeSubscriptions()).toBe(0)
    })
  })

  it('hands out live messages in id order when the bus brings them out of order, each once', async () => {
    const chatId = freshChat()
    const client = wsClient(server.baseUrl)
    const inChat = collect<Added>(client, MESSAGE_ADDED, { chatId })
    const everyChat = collect<Added>(client, MESSAGE_ADDED, {})
    await subscriptionsActive(server.events, 2)
    // Live from here on: what follows is past either stream's start.
    await send('first', chatId)
    await inChat.until(1)
    await expect.poll(() => textsOf(everyChat.items).includes('first')).toBe(true)

    // Stored, and published by hand out of order and twice, as instances and the relay may.
    const repository = createMessagesRepository(db())
    const topic = chatTopics.messageAdded(chatId)
    const pending = []
    for (const text of ['second', 'third', 'fourth']) {
      pending.push(await repository.insertWithEvent({ chatId, text, author: 'bus' }, topic))
    }
    const [second, third, fourth] = pending as [
      (typeof pending)[0],
      (typeof pending)[0],
      (typeof pending)[0],
    ]
    for (const event of [third, second, third, fourth]) {
      await server.events.deliver(topic, event.payload, event.id)
    }
    await send('barrier', chatId)

    const expected = ['first', 'second', 'third', 'fourth', 'barrier']
    expect(textsOf(await inChat.until(5))).toEqual(expected)
    await expect.poll(() => textsOf(everyChat.items).includes('barrier')).toBe(true)
    expect(textsOf(everyChat.items).filter((text) => expected.includes(text))).toEqual(expected)
    expect(inChat.items).toHaveLength(5)
    await client.dispose()
  })

  describe('notificationAdded(after)', () => {
    /** A PENDING order of the holder of `token`, moved by an admin along `statuses`. */
    async function walkOrder(token: string, statuses: string[]) {
      const placed = await server.api.post('/orders', {
        json: { items: [{ productId, quantity: 1 }] },
        token,
      })
      for (const status of statuses) {
        const moved = await server.api.patch(`/orders/${placed.body.data.id}`, {
          json: { status },
          token: admin,
        })
        expect(moved.status, moved.text).toBe(200)
      }
      return placed.body.data.id as number
    }
    const notificationIds = async (token: string) =>
      ((await server.api.get('/notifications?limit=100', { token })).body.data as { id: number }[])
        .map((notification) => notification.id)
        .sort((a, b) => a - b)

    it.each(PROTOCOLS)(
      "replays the caller's own notifications after `after`, then goes on live, over %s",
      async (protocol) => {
        const owner = await newUser(server.api)
        const other = await newUser(server.api)
        const owned = await walkOrder(owner.accessToken, ['PAID'])
        // Another user's, made between the owner's: none of them may be replayed.
        await walkOrder(other.accessToken, ['PAID', 'SHIPPED'])
        await walkOrder(owner.accessToken, ['PAID', 'CANCELLED'])
        const [first] = await notificationIds(owner.accessToken)

        const resumed = await subscribe<Notified>(
          protocol,
          NOTIFICATION_ADDED,
          { after: String(first) },
          owner.accessToken,
        )
        const titleOf = (item: Notified) => item.notificationAdded.title
        expect((await resumed.until(2)).map(titleOf)).toEqual([
          expect.stringMatching(/ is paid$/),
          expect.stringMatching(/ was cancelled$/),
        ])
        await walkOrder(other.accessToken, ['PAID'])
        const shipped = await server.api.patch(`/orders/${owned}`, {
          json: { status: 'SHIPPED' },
          token: admin,
        })
        expect(shipped.status).toBe(200)
        expect(titleOf((await resumed.until(3))[2] as Notified)).toBe(`Order #${owned} has shipped`)
        const ownIds = await notificationIds(owner.accessToken)
        expect(resumed.items.map((item) => Number(item.notificationAdded.id))).toEqual(
          ownIds.slice(1),
        )
      },
    )

    it("refuses another user's notification as `after`, as an unknown one, with BAD_USER_INPUT", async () => {
      const owner = await newUser(server.api)
      const other = await newUser(server.api)
      await walkOrder(other.accessToken, ['PAID'])
      const [othersId] = await notificationIds(other.accessToken)
      const answers = []
      for (const after of [String(othersId), '2147483647', 'x']) {
        const refused = await subscribe<Notified>(
          TRANSPORT_WS,
          NOTIFICATION_ADDED,
          { after },
          owner.accessToken,
        )
        const errors = await refused.settled()
        answers.push({ errors, items: refused.items })
      }
      const refusal = {
        errors: [
          {
            message: 'after must be the id of one of your notifications',
            locations: expect.any(Array),
            path: ['notificationAdded'],
            extensions: {
              code: 'BAD_USER_INPUT',
              details: { after: ['must be the id of one of your notifications'] },
            },
          },
        ],
        items: [],
      }
      // Alike whichever it is: whether a notification is another user's is not the caller's to learn.
      expect(answers).toEqual([refusal, refusal, refusal])
    })

    it('replays exactly 1000 notifications, and refuses 1001 before any', async () => {
      const owner = await newUser(server.api)
      const rows = await db()
        .insert(notifications)
        .values(
          Array.from({ length: 1002 }, (_, index) => ({
            userId: owner.user.id as number,
            kind: 'test.bulk',
            title: `bulk ${index}`,
            body: 'stored in bulk',
          })),
        )
        .returning({ id: notifications.id })
      const [oldest, first, ...rest] = rows.map((row) => row.id).sort((a, b) => a - b)
      const longest = await subscribe<Notified>(
        TRANSPORT_WS,
        NOTIFICATION_ADDED,
        { after: String(first) },
        owner.accessToken,
      )
      const replayed = await longest.until(1000)
      expect(replayed.map((item) => Number(item.notificationAdded.id))).toEqual(rest)
      const tooLong = await subscribe<Notified>(
        TRANSPORT_WS,
        NOTIFICATION_ADDED,
        { after: String(oldest) },
        owner.accessToken,
      )
      const errors = await tooLong.settled()
      expect(errors[0]?.extensions).toMatchObject({
        code: 'BAD_USER_INPUT',
        details: { after: [expect.stringContaining('more than 1000 notifications')] },
      })
      expect(tooLong.items).toEqual([])
      const [{ total } = { total: 0 }] = await db()
        .select({ total: count() })
        .from(notifications)
        .where(eq(notifications.userId, owner.user.id as number))
      expect(total).toBe(1002)
    })
  })
})
