import { sql } from 'drizzle-orm'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { messages } from '../src/db/schema.js'
import { backends } from './helpers/backends.js'
import { collect, graphql, subscriptionsActive, wsClient } from './helpers/graphql.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'

const SEND = `mutation Send($text: String!, $author: String!, $chatId: ID) {
  sendMessage(text: $text, author: $author, chatId: $chatId) { id chatId text author createdAt }
}`
const SEND_DEFAULT_CHAT = `mutation Send($text: String!, $author: String!) {
  sendMessage(text: $text, author: $author) { id chatId }
}`
const LIST = `query List($chatId: ID, $limit: Int, $before: ID) {
  messages(chatId: $chatId, limit: $limit, before: $before) { id chatId text }
}`

describe.each(backends)('GraphQL chat on $name', (backend) => {
  let server: TestServer
  const send = async (text: string, chatId?: string, author = 'ann') => {
    const response = await graphql(server.baseUrl, SEND, { text, author, chatId })
    expect(response.body.errors, JSON.stringify(response.body)).toBeUndefined()
    return response.body.data.sendMessage
  }
  const list = async (variables: Record<string, unknown>) => {
    const response = await graphql(server.baseUrl, LIST, variables)
    expect(response.body.errors, JSON.stringify(response.body)).toBeUndefined()
    return response.body.data.messages as { id: string; chatId: string; text: string }[]
  }
  const stored = async () => server.testDatabase.database.db.select().from(messages)

  beforeAll(async () => {
    server = await startServer(backend)
  })
  afterAll(() => server?.close())

  describe('sendMessage', () => {
    it('stores the message and answers it with the service-assigned fields', async () => {
      const message = await send('hello', 'lobby')
      expect(message).toMatchObject({ chatId: 'lobby', text: 'hello', author: 'ann' })
      expect(message.id).toMatch(/^\d+$/)
      expect(new Date(message.createdAt).toISOString()).toBe(message.createdAt)
      expect((await list({ chatId: 'lobby' })).map((each) => each.id)).toEqual([message.id])
    })

    it("signs a signed-in caller's message with its account's name, whatever author it gives", async () => {
      const user = await newUser(server.api)
      const byHttp = await graphql(
        server.baseUrl,
        SEND,
        { text: 'signed', author: 'Administrator', chatId: 'signed' },
        user.accessToken,
      )
      expect(byHttp.body.data.sendMessage.author).toBe(user.user.name)
      const client = wsClient(server.baseUrl, { authToken: user.accessToken })
      const byWebSocket = await new Promise<{ sendMessage: { author: string } }>(
        (resolve, reject) => {
          client.subscribe<{ sendMessage: { author: string } }>(
            { query: SEND, variables: { text: 'over ws', author: 'someone', chatId: 'signed' } },
            { next: ({ data }) => data && resolve(data), error: reject, complete: () => {} },
          )
        },
      )
      expect(byWebSocket.sendMessage.author).toBe(user.user.name)
      await client.dispose()
      // Anonymous callers still name their author, as clients written before tokens do.
      expect((await send('anonymous', 'signed', 'cy')).author).toBe('cy')
    })

    it('posts to "general" in the form without chatId', async () => {
      const response = await graphql(server.baseUrl, SEND_DEFAULT_CHAT, {
        text: 'hi',
        author: 'bo',
      })
      expect(response.body.data.sendMessage.chatId).toBe('general')
    })

    it('answers only the fields asked for', async () => {
      const response = await graphql(
        server.baseUrl,
        'mutation { sendMessage(text: "x", author: "y") { text } }',
      )
      expect(response.body).toEqual({ data: { sendMessage: { text: 'x' } } })
    })

    it.each([
      ['empty text', { text: '' }, 'text'],
      ['text of 4001 characters', { text: 't'.repeat(4001) }, 'text'],
      ['empty author', { author: '' }, 'author'],
      ['author of 101 characters', { author: 'a'.repeat(101) }, 'author'],
      ['empty chatId', { chatId: '' }, 'chatId'],
    ])('rejects an %s with BAD_USER_INPUT and stores nothing', async (_, change, field) => {
      const before = (await stored()).length
      const variables = { text: 'ok', author: 'ann', chatId: 'lobby', ...change }
      const response = await graphql(server.baseUrl, SEND, variables)
      expect(response.body.data).toBeNull()
      expect(response.body.errors?.[0]?.extensions).toMatchObject({
        code: 'BAD_USER_INPUT',
        details: { [field]: [expect.any(String)] },
      })
      expect((await stored()).length).toBe(before)
    })

    it('accepts the longest text and author, counting characters, not UTF-16 units', async () => {
      const message = await send('😀'.repeat(4000), 'limits', 'a'.repeat(100))
      expect([...message.text]).toHaveLength(4000)
    })

    it('rejects a missing required argument as a validation error', async () => {
      const response = await graphql(server.baseUrl, 'mutation { sendMessage(text: "x") { id } }')
      expect(response.body.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED')
    })
  })

  describe('messages', () => {
    it('lists the newest messages oldest first, and pages back with before', async () => {
      const sent = []
      for (const text of ['one', 'two', 'three', 'four', 'five'])
        sent.push(await send(text, 'paging'))
      expect((await list({ chatId: 'paging', limit: 2 })).map((each) => each.text)).toEqual([
        'four',
        'five',
      ])
      const older = await list({ chatId: 'paging', limit: 2, before: sent[3].id })
      expect(older.map((each) => each.text)).toEqual(['two', 'three'])
      expect(await list({ chatId: 'paging', before: sent[0].id })).toEqual([])
    })

    it('lists every chat without chatId, and one chat with it', async () => {
      await send('in a', 'chat-a')
      await send('in b', 'chat-b')
      const all = await list({ limit: 1000 })
      expect(all.map((each) => each.chatId)).toEqual(expect.arrayContaining(['chat-a', 'chat-b']))
      expect((await list({ chatId: 'chat-a' })).map((each) => each.text)).toEqual(['in a'])
    })

    it('defaults to 100 messages', async () => {
      const many = Array.from({ length: 101 }, (_, index) => ({
        chatId: 'crowd',
        text: `m${index}`,
        author: 'bot',
      }))
      await server.testDatabase.database.db.insert(messages).values(many)
      const page = await list({ chatId: 'crowd' })
      expect(page).toHaveLength(100)
      expect(page.at(-1)?.text).toBe('m100')
    })

    it.each([
      ['limit 0', { limit: 0 }, 'limit'],
      ['limit 1001', { limit: 1001 }, 'limit'],
      ['a before that is not an id', { before: 'abc' }, 'before'],
    ])('rejects %s with BAD_USER_INPUT', async (_, variables, field) => {
      const response = await graphql(server.baseUrl, LIST, variables)
      expect(response.body.errors?.[0]?.extensions).toMatchObject({
        code: 'BAD_USER_INPUT',
        details: { [field]: [expect.any(String)] },
      })
    })

    it('accepts limit 1 and 1000', async () => {
      expect(await list({ limit: 1 })).toHaveLength(1)
      expect((await list({ limit: 1000 })).length).toBeGreaterThan(100)
    })
  })

  describe('messageAdded', () => {
    // Each test starts with no live subscription, so the counts below are its own.
    afterEach(async () => {
      await expect.poll(() => server.events.activeSubscriptions()).toBe(0)
    })

    it('delivers a chat only its own messages, and every message without chatId', async () => {
      const client = wsClient(server.baseUrl)
      const room = collect(client, 'subscription { messageAdded(chatId: "room") { text chatId } }')
      const everything = collect(client, 'subscription { messageAdded { text } }')
      await subscriptionsActive(server.events, 2)
      await send('elsewhere', 'hall')
      await send('here', 'room')
      expect(await room.until(1)).toEqual([{ messageAdded: { text: 'here', chatId: 'room' } }])
      expect(await everything.until(2)).toEqual([
        { messageAdded: { text: 'elsewhere' } },
        { messageAdded: { text: 'here' } },
      ])
      room.dispose()
      everything.dispose()
      await client.dispose()
    })

    it('keeps chats whose ids look like topic wildcards or levels to themselves', async () => {
      // Events travel on chat/<id>/messageAdded: these ids must not widen a subscription.
      const ids = ['+', '#', 'a/b', 'a*', '%2B']
      const client = wsClient(server.baseUrl)
      const subscriptions = ids.map((chatId) =>
        collect(client, 'subscription($chatId: ID) { messageAdded(chatId: $chatId) { chatId } }', {
          chatId,
        }),
      )
      const everything = collect(client, 'subscription { messageAdded { chatId } }')
      await subscriptionsActive(server.events, ids.length + 1)
      await send('ordinary', 'a')
      for (const chatId of ids) await send(`to ${chatId}`, chatId)
      // Once every chat's subscriber has all of them, each message has been delivered.
      await everything.until(ids.length + 1)
      for (const [index, chatId] of ids.entries()) {
        expect(subscriptions[index]?.items).toEqual([{ messageAdded: { chatId } }])
      }
      for (const subscription of [...subscriptions, everything]) subscription.dispose()
      await client.dispose()
    })

    it('takes an authToken in the connection parameters', async () => {
      const { accessToken } = await login(server.api, ADMIN)
      const client = wsClient(server.baseUrl, { authToken: accessToken })
      const subscription = collect(client, 'subscription { messageAdded(chatId: "auth") { text } }')
      await subscriptionsActive(server.events, 1)
      await send('authenticated', 'auth')
      expect(await subscription.until(1)).toEqual([{ messageAdded: { text: 'authenticated' } }])
      subscription.dispose()
      await client.dispose()
    })

    it('stops delivering, and unsubscribes, when the client completes', async () => {
      const client = wsClient(server.baseUrl)
      const subscription = collect(client, 'subscription { messageAdded { id } }')
      await subscriptionsActive(server.events, 1)
      subscription.dispose()
      await expect.poll(() => server.events.activeSubscriptions()).toBe(0)
      await send('after the end')
      expect(subscription.items).toEqual([])
      await client.dispose()
    })
  })

  describe('limits and errors', () => {
    it('refuses more aliases than the limit', async () => {
      const fields = Array.from(
        { length: 21 },
        (_, index) => `m${index}: messages(limit: 1) { id }`,
      )
      const response = await graphql(server.baseUrl, `{ ${fields.join(' ')} }`)
      expect(response.body.errors?.[0]).toMatchObject({
        message: expect.stringContaining('aliases'),
        extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
      })
    })

    it('refuses a bad bearer token with UNAUTHENTICATED, and takes a good one', async () => {
      const refused = await graphql(server.baseUrl, '{ messages(limit: 1) { id } }', {}, 'forged')
      expect(refused.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED')
      const { accessToken } = await login(server.api, ADMIN)
      const accepted = await graphql(
        server.baseUrl,
        '{ messages(limit: 1) { id } }',
        {},
        accessToken,
      )
      expect(accepted.body.errors).toBeUndefined()
    })

    it('answers introspection', async () => {
      const response = await graphql(server.baseUrl, '{ __schema { subscriptionType { name } } }')
      expect(response.body.data).toEqual({
        __schema: { subscriptionType: { name: 'Subscription' } },
      })
    })

    it('hides an unexpected failure behind INTERNAL_SERVER_ERROR', async () => {
      const broken = await startServer(backend)
      try {
        await broken.testDatabase.database.db.execute(sql`drop table messages`)
        const response = await graphql(broken.baseUrl, '{ messages { id } }')
        expect(response.body.errors).toEqual([
          expect.objectContaining({
            message: 'Internal server error',
            extensions: { code: 'INTERNAL_SERVER_ERROR' },
          }),
        ])
        expect(JSON.stringify(response.body)).not.toMatch(/relation|select|messages" does/)
      } finally {
        await broken.close()
      }
    })
  })

  it('serves GraphiQL in development only', async () => {
    expect((await fetch(`${server.baseUrl}/graphiql`)).status).toBe(404)
    const development = await startServer(backend, { NODE_ENV: 'development' })
    try {
      expect((await fetch(`${development.baseUrl}/graphiql`)).status).toBe(200)
    } finally {
      await development.close()
    }
  })
})
