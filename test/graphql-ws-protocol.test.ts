import { createSigner } from 'fast-jwt'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { ClientOptions } from 'ws'
import WebSocket from 'ws'
import { backends } from './helpers/backends.js'
import { graphql, subscriptionsActive, wsUrl } from './helpers/graphql.js'
import {
  type Closed,
  LEGACY_WS,
  openRawSocket,
  type RawSocket,
  TRANSPORT_WS,
} from './helpers/raw-socket.js'
import {
  ADMIN,
  login,
  newUser,
  startServer,
  type TestServer,
  testEnvironment,
} from './helpers/server.js'

/**
 * The GraphQL over WebSocket protocols at the wire: raw frames in, frames and close
 * codes out. `graphql-transport-ws` is https://github.com/enisdenjo/graphql-ws/blob/master/PROTOCOL.md,
 * `graphql-ws` the legacy one of subscriptions-transport-ws. One server serves both, so
 * what they share is one table of cases run in each protocol's words.
 */

const MESSAGE_ADDED_X = 'subscription { messageAdded(chatId: "x") { id text chatId } }'
interface Protocol {
  protocol: string
  subscribe: string
  complete: string
  next: string
  /** The frames a connection refused before its acknowledgement hears before the close. */
  refusal: (reason: string) => unknown[]
}

const PROTOCOLS: Protocol[] = [
  {
    protocol: TRANSPORT_WS,
    subscribe: 'subscribe',
    complete: 'complete',
    next: 'next',
    refusal: () => [],
  },
  {
    protocol: LEGACY_WS,
    subscribe: 'start',
    complete: 'stop',
    next: 'data',
    refusal: (message) => [{ type: 'connection_error', payload: { message } }],
  },
]

const SEND_MESSAGE = `mutation Send($text: String!, $chatId: ID!) {
  sendMessage(text: $text, author: "ws-tester", chatId: $chatId) { id text chatId }
}`

describe.each(backends)('GraphQL over WebSocket on $name', (backend) => {
  let server: TestServer
  let adminToken: string
  const sockets: RawSocket[] = []

  function open(protocol: string | undefined, options: ClientOptions = {}): Promise<RawSocket> {
    const opened = openRawSocket(wsUrl(server.baseUrl), protocol, options)
    opened.then(
      (socket) => sockets.push(socket),
      () => {},
    )
    return opened
  }

  /** A socket of `protocol` past connection_init and connection_ack. */
  async function acknowledged(
    payload?: Record<string, unknown>,
    options?: ClientOptions,
    protocol: string = TRANSPORT_WS,
  ) {
    const socket = await open(protocol, options)
    socket.send(
      payload === undefined ? { type: 'connection_init' } : { type: 'connection_init', payload },
    )
    expect(await socket.next()).toEqual({ type: 'connection_ack' })
    return socket
  }

  /** The close the client observes, failing the test instead of hanging. */
  function closeOf(socket: RawSocket, timeoutMs = 5000): Promise<Closed> {
    return Promise.race([
      socket.closed,
      new Promise<Closed>((_, reject) =>
        setTimeout(
          () =>
            reject(
              new Error(`still open after ${timeoutMs} ms; got ${JSON.stringify(socket.frames)}`),
            ),
          timeoutMs,
        ).unref(),
      ),
    ])
  }

  async function sendMessage(text: string, chatId: string) {
    const response = await graphql(server.baseUrl, SEND_MESSAGE, { text, chatId })
    expect(response.body.errors).toBeUndefined()
    return response.body.data.sendMessage as { id: string; text: string; chatId: string }
  }

  /** Waits until the server holds at most `count` live subscriptions. */
  async function subscriptionsDownTo(count: number, timeoutMs = 5000) {
    const deadline = Date.now() + timeoutMs
    while (server.events.activeSubscriptions() > count) {
      if (Date.now() > deadline) {
        throw new Error(`${server.events.activeSubscriptions()} subscriptions, expected ${count}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }

  beforeAll(async () => {
    server = await startServer(backend)
    adminToken = (await login(server.api, ADMIN)).accessToken
  })
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.ws.terminate()
    await subscriptionsDownTo(0)
  })
  afterAll(() => server?.close())

  describe.each(PROTOCOLS)('$protocol', ({ protocol, subscribe, complete, next, refusal }) => {
    const ready = (payload?: Record<string, unknown>, options?: ClientOptions) =>
      acknowledged(payload, options, protocol)

    it('acks, delivers the selected fields of the subscribed chat only, and ends on its complete', async () => {
      const before = server.events.activeSubscriptions()
      const socket = await ready()
      socket.send({ id: '1', type: subscribe, payload: { query: MESSAGE_ADDED_X } })
      await subscriptionsActive(server.events, before + 1)

      // Published first: had it been delivered, it would come before the one to "x".
      await sendMessage('to chat y', 'y')
      const sent = await sendMessage('to chat x', 'x')
      expect(await socket.next()).toEqual({
        id: '1',
        type: next,
        payload: { data: { messageAdded: { id: sent.id, text: 'to chat x', chatId: 'x' } } },
      })

      socket.send({ id: '1', type: complete })
      await subscriptionsDownTo(before)
      await sendMessage('after complete', 'x')
      socket.send({ id: 'q', type: subscribe, payload: { query: '{ messages(limit: 1) { id } }' } })
      expect(await socket.next()).toMatchObject({ id: 'q', type: next })
      expect(socket.ws.readyState).toBe(WebSocket.OPEN)
    })

    it('closes with 4400 on a frame that is not JSON', async () => {
      const socket = await ready()
      socket.sendRaw('this is not json')
      expect((await closeOf(socket)).code).toBe(4400)
    })

    it('closes with 4400 on a message of an unknown type', async () => {
      const socket = await ready()
      socket.send({ type: 'nope' })
      expect((await closeOf(socket)).code).toBe(4400)
    })

    it('closes with 4400 on an operation without an id', async () => {
      const socket = await ready()
      socket.send({ type: subscribe, payload: { query: '{ messages { id } }' } })
      expect((await closeOf(socket)).code).toBe(4400)
    })

    it('closes with 4401 on an operation before the connection is acknowledged', async () => {
      const socket = await open(protocol)
      socket.send({ id: '1', type: subscribe, payload: { query: MESSAGE_ADDED_X } })
      expect(await closeOf(socket)).toEqual({ code: 4401, reason: 'Unauthorized' })
      expect(socket.frames).toEqual(refusal('Unauthorized'))
    })

    it('acks a valid authToken, an admin’s and a user’s', async () => {
      await ready({ authToken: adminToken })
      await ready({ authToken: (await newUser(server.api)).accessToken })
    })

    it.each([
      ['a garbage string', () => 'garbage'],
      [
        'a JWT signed with another secret',
        () =>
          createSigner({ key: 'another-secret-that-is-long-enough-for-hs256', algorithm: 'HS256' })(
            { sub: '1', role: 'admin' },
          ),
      ],
      [
        'an expired JWT',
        () =>
          createSigner({ key: testEnvironment.JWT_SECRET, algorithm: 'HS256' })({
            sub: '1',
            role: 'admin',
            exp: Math.floor(Date.now() / 1000) - 60,
          }),
      ],
      ['a number', () => 12345],
    ])('closes with 4403 on an authToken that is %s', async (_, token) => {
      const socket = await open(protocol)
      socket.send({ type: 'connection_init', payload: { authToken: token() } })
      expect(await closeOf(socket)).toEqual({ code: 4403, reason: 'Forbidden' })
      expect(socket.frames).toEqual(refusal('Forbidden'))
    })

    it('closes with 4403 at once on a refused Authorization header of the upgrade request', async () => {
      const socket = await open(protocol, { headers: { authorization: 'Bearer garbage' } })
      expect(await closeOf(socket)).toEqual({ code: 4403, reason: 'Forbidden' })
      expect(socket.frames).toEqual([])
    })

    it('acks a valid Authorization header of the upgrade request', async () => {
      await ready(undefined, { headers: { authorization: `Bearer ${adminToken}` } })
    })

    it('closes with 4408 when no connection_init comes in time', { timeout: 15_000 }, async () => {
      const socket = await open(protocol)
      expect(await closeOf(socket, 10_000)).toEqual({
        code: 4408,
        reason: 'Connection initialisation timeout',
      })
      expect(socket.frames).toEqual([])
    })

    it('closes with 4409 on an operation whose id is still active, and ends both', async () => {
      const before = server.events.activeSubscriptions()
      const socket = await ready()
      socket.send({ id: '1', type: subscribe, payload: { query: MESSAGE_ADDED_X } })
      await subscriptionsActive(server.events, before + 1)
      socket.send({ id: '1', type: subscribe, payload: { query: MESSAGE_ADDED_X } })
      expect((await closeOf(socket)).code).toBe(4409)
      await subscriptionsDownTo(before)
    })

    it('closes with 4429 on a second connection_init', async () => {
      const socket = await ready()
      socket.send({ type: 'connection_init' })
      expect((await closeOf(socket)).code).toBe(4429)
    })

    it('runs a query: one result, then complete', async () => {
      const chatId = `query-chat-${protocol}`
      const sent = await sendMessage('for the query', chatId)
      const socket = await ready()
      socket.send({
        id: 'q',
        type: subscribe,
        payload: { query: `query { messages(chatId: "${chatId}") { id text } }` },
      })
      expect(await socket.next()).toEqual({
        id: 'q',
        type: next,
        payload: { data: { messages: [{ id: sent.id, text: 'for the query' }] } },
      })
      expect(await socket.next()).toEqual({ id: 'q', type: 'complete' })
    })

    it('runs a mutation: one result, then complete', async () => {
      const chatId = `mutation-chat-${protocol}`
      const socket = await ready()
      socket.send({
        id: 'm',
        type: subscribe,
        payload: { query: SEND_MESSAGE, variables: { text: 'over the socket', chatId } },
      })
      const result = await socket.next()
      expect(result).toMatchObject({ id: 'm', type: next })
      expect(result.payload).toEqual({
        data: { sendMessage: { id: expect.any(String), text: 'over the socket', chatId } },
      })
      expect(await socket.next()).toEqual({ id: 'm', type: 'complete' })
      const stored = await graphql(server.baseUrl, `{ messages(chatId: "${chatId}") { id } }`)
      expect(stored.body.data.messages).toEqual([{ id: result.payload.data.sendMessage.id }])
    })

    it('answers a validation error with an error message and keeps the socket open', async () => {
      const socket = await ready()
      socket.send({ id: 'v', type: subscribe, payload: { query: '{ messages { nope } }' } })
      const error = await socket.next()
      expect(error).toMatchObject({ id: 'v', type: 'error' })
      expect(error.payload).toEqual([
        expect.objectContaining({
          message: expect.stringContaining('nope'),
          extensions: expect.objectContaining({ code: 'GRAPHQL_VALIDATION_FAILED' }),
        }),
      ])
      // The id is free again and the socket still serves operations.
      socket.send({ id: 'v', type: subscribe, payload: { query: '{ messages(limit: 1) { id } }' } })
      expect(await socket.next()).toMatchObject({ id: 'v', type: next })
      expect(await socket.next()).toEqual({ id: 'v', type: 'complete' })
      expect(socket.ws.readyState).toBe(WebSocket.OPEN)
    })

    it('answers a syntax error with an error message and keeps the socket open', async () => {
      const socket = await ready()
      socket.send({ id: 's', type: subscribe, payload: { query: 'subscription {' } })
      const error = await socket.next()
      expect(error).toMatchObject({ id: 's', type: 'error' })
      expect(error.payload).toEqual([
        expect.objectContaining({ message: expect.stringContaining('Syntax Error') }),
      ])
      expect(socket.ws.readyState).toBe(WebSocket.OPEN)
    })

    it('reports a resolver’s input error in its result, with its code, then completes', async () => {
      const socket = await ready()
      socket.send({
        id: 'e',
        type: subscribe,
        payload: { query: SEND_MESSAGE, variables: { text: '', chatId: 'x' } },
      })
      const result = await socket.next()
      expect(result).toMatchObject({ id: 'e', type: next, payload: { data: null } })
      expect(result.payload.errors).toEqual([
        expect.objectContaining({
          path: ['sendMessage'],
          extensions: expect.objectContaining({ code: 'BAD_USER_INPUT' }),
        }),
      ])
      expect(await socket.next()).toEqual({ id: 'e', type: 'complete' })
    })

    // The chat schema nests at most 2 levels (messageAdded { id }), and inline fragments
    // add none, so no valid document reaches the depth limit of 8; the alias limit can.
    it('refuses a subscription with more than 20 aliases, and takes one with 20', async () => {
      const aliased = (count: number) =>
        `subscription { messageAdded(chatId: "x") { ${Array.from(
          { length: count },
          (_, index) => `a${index}: id`,
        ).join(' ')} } }`
      const before = server.events.activeSubscriptions()
      const socket = await ready()
      socket.send({ id: 'many', type: subscribe, payload: { query: aliased(21) } })
      const error = await socket.next()
      expect(error).toMatchObject({ id: 'many', type: 'error' })
      expect(error.payload).toEqual([
        expect.objectContaining({
          message: expect.stringMatching(/21 aliases; the limit is 20/),
          extensions: expect.objectContaining({ code: 'GRAPHQL_VALIDATION_FAILED' }),
        }),
      ])
      expect(server.events.activeSubscriptions()).toBe(before)

      socket.send({ id: 'enough', type: subscribe, payload: { query: aliased(20) } })
      await subscriptionsActive(server.events, before + 1)
      const sent = await sendMessage('aliased', 'x')
      const result = await socket.next()
      expect(result).toMatchObject({ id: 'enough', type: next })
      expect(Object.keys(result.payload.data.messageAdded)).toHaveLength(20)
      expect(result.payload.data.messageAdded.a19).toBe(sent.id)
    })

    it('applies the depth limit to a subscription too', async () => {
      // Nine levels of selections: invalid for the chat schema as well, but the depth
      // rule must report it among the errors.
      const deep = 'subscription { messageAdded { a { b { c { d { e { f { g { h } } } } } } } } }'
      const socket = await ready()
      socket.send({ id: 'deep', type: subscribe, payload: { query: deep } })
      const error = await socket.next()
      expect(error).toMatchObject({ id: 'deep', type: 'error' })
      expect(error.payload).toContainEqual(
        expect.objectContaining({
          message: 'The operation is 9 levels deep; the limit is 8',
          extensions: expect.objectContaining({ code: 'GRAPHQL_VALIDATION_FAILED' }),
        }),
      )
      expect(socket.ws.readyState).toBe(WebSocket.OPEN)
    })
  })

  it.each([
    ['an unsupported subprotocol', 'foo'],
    ['no subprotocol', undefined],
  ])('closes with 4406 on %s', async (_, protocol) => {
    const socket = await open(protocol)
    expect((await closeOf(socket)).code).toBe(4406)
  })

  describe('graphql-transport-ws only', () => {
    it('answers ping with pong once acknowledged', async () => {
      const socket = await acknowledged()
      socket.send({ type: 'ping' })
      expect(await socket.next()).toMatchObject({ type: 'pong' })
    })

    it('answers ping with pong before connection_init too', async () => {
      const socket = await open(TRANSPORT_WS)
      socket.send({ type: 'ping' })
      expect(await socket.next()).toMatchObject({ type: 'pong' })
      expect(socket.ws.readyState).toBe(WebSocket.OPEN)
    })
  })

  describe('graphql-ws (legacy) only', () => {
    it('closes normally on connection_terminate, ending its subscriptions', async () => {
      const before = server.events.activeSubscriptions()
      const socket = await acknowledged(undefined, undefined, LEGACY_WS)
      socket.send({ id: '1', type: 'start', payload: { query: MESSAGE_ADDED_X } })
      await subscriptionsActive(server.events, before + 1)
      socket.send({ type: 'connection_terminate' })
      expect(await closeOf(socket)).toEqual({ code: 1000, reason: 'Normal closure' })
      await subscriptionsDownTo(before)
    })

    it('takes a numeric id, and answers it as a string', async () => {
      const socket = await acknowledged(undefined, undefined, LEGACY_WS)
      socket.send({ id: 7, type: 'start', payload: { query: '{ messages(limit: 1) { id } }' } })
      expect(await socket.next()).toMatchObject({ id: '7', type: 'data' })
      expect(await socket.next()).toEqual({ id: '7', type: 'complete' })
    })
  })
})
