import { eq } from 'drizzle-orm'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { messages } from '../src/db/schema.js'
import { backends } from './helpers/backends.js'
import { graphql, subscriptionsActive, wsUrl } from './helpers/graphql.js'
import {
  type Frame,
  LEGACY_WS,
  openRawSocket,
  type RawSocket,
  TRANSPORT_WS,
} from './helpers/raw-socket.js'
import { freshAccount, startServer, type TestServer } from './helpers/server.js'

/**
 * GraphQL draws on the rate-limit budget of REST, whatever carries it: every HTTP request
 * and every operation a WebSocket starts count for the caller (the user, else the
 * address). Each test gets a server of its own with a budget of 5.
 */

const SEND = `mutation Send($text: String!, $chatId: ID!) {
  sendMessage(text: $text, author: "limited", chatId: $chatId) { id }
}`
const RATE_LIMITED = {
  message: expect.stringMatching(/^Too many requests: retry in/),
  extensions: { code: 'RATE_LIMITED', retryAfter: expect.any(Number) },
}

describe.each(backends)('rate limits on GraphQL on $name', (backend) => {
  let server: TestServer
  const sockets: RawSocket[] = []

  beforeEach(async () => {
    server = await startServer(backend, { RATE_LIMIT_MAX: '5', RATE_LIMIT_WINDOW: '60000' })
  })
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.ws.terminate()
    await server?.close()
  })

  async function acknowledged(protocol: string, payload: Record<string, unknown> = {}) {
    const socket = await openRawSocket(wsUrl(server.baseUrl), protocol)
    sockets.push(socket)
    socket.send({ type: 'connection_init', payload })
    expect(await socket.next()).toMatchObject({ type: 'connection_ack' })
    return socket
  }

  /** Every operation's frames, read until each of `ids` has ended (complete or error). */
  async function untilEnded(socket: RawSocket, ids: string[]) {
    const frames = new Map<string, Frame[]>(ids.map((id) => [id, []]))
    const open = new Set(ids)
    while (open.size > 0) {
      const frame = await socket.next(10_000)
      frames.get(frame.id)?.push(frame)
      if (frame.type === 'complete' || frame.type === 'error') open.delete(frame.id)
    }
    return frames
  }

  const post = (accept: string) =>
    fetch(`${server.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept },
      body: JSON.stringify({ query: '{ messages(limit: 1) { id } }' }),
    })

  it('over HTTP: the sixth request is 429 with Retry-After, in the GraphQL error shape', async () => {
    for (let request = 0; request < 5; request += 1) {
      expect((await graphql(server.baseUrl, '{ messages(limit: 1) { id } }')).status).toBe(200)
    }
    for (const accept of ['application/graphql-response+json', 'application/json']) {
      const limited = await post(accept)
      expect(limited.status).toBe(429)
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(await limited.json()).toEqual({
        errors: [
          {
            message: expect.stringMatching(/^Too many requests/),
            extensions: { code: 'RATE_LIMITED' },
          },
        ],
      })
    }
    // REST keeps its envelope.
    const rest = await server.api.get('/products')
    expect(rest.status).toBe(429)
    expect(rest.body.error.code).toBe('RATE_LIMITED')
  })

  it('over graphql-transport-ws: 5 of 50 mutations run, the others are RATE_LIMITED, the socket stays', async () => {
    // sendMessage reads the caller's account (its name is the author): a real one.
    const { accessToken } = await freshAccount(server)
    const socket = await acknowledged(TRANSPORT_WS, { authToken: accessToken })
    const ids = Array.from({ length: 50 }, (_, index) => `m${index}`)
    for (const id of ids) {
      socket.send({
        id,
        type: 'subscribe',
        payload: { query: SEND, variables: { text: id, chatId: 'limited-ws' } },
      })
    }
    const frames = [...(await untilEnded(socket, ids)).values()]
    const ran = frames.filter(([first]) => first?.type === 'next')
    const refused = frames.filter(([first]) => first?.type === 'error')
    expect(ran).toHaveLength(5)
    expect(refused).toHaveLength(45)
    expect(refused[0]?.[0]?.payload).toEqual([RATE_LIMITED])
    const stored = await server.testDatabase.database.db
      .select()
      .from(messages)
      .where(eq(messages.chatId, 'limited-ws'))
    expect(stored).toHaveLength(5)
    socket.send({ type: 'ping' })
    expect(await socket.next()).toEqual({ type: 'pong' })
  })

  it('over legacy graphql-ws: 5 of 10 subscriptions start, the others are RATE_LIMITED', async () => {
    const socket = await acknowledged(LEGACY_WS, {
      authToken: (await freshAccount(server)).accessToken,
    })
    const ids = Array.from({ length: 10 }, (_, index) => `s${index}`)
    for (const id of ids) {
      socket.send({
        id,
        type: 'start',
        payload: { query: 'subscription { messageAdded(chatId: "limited-legacy") { id } }' },
      })
    }
    await subscriptionsActive(server.events, 5)
    const refused = await untilEnded(socket, ids.slice(5))
    for (const [frame] of refused.values()) {
      expect(frame).toMatchObject({ type: 'error', payload: [RATE_LIMITED] })
    }
    expect(server.events.activeSubscriptions()).toBe(5)
  })

  it('one budget per user for HTTP and WebSocket operations', async () => {
    const { accessToken: token } = await freshAccount(server)
    for (let request = 0; request < 3; request += 1) {
      const response = await graphql(server.baseUrl, '{ messages(limit: 1) { id } }', {}, token)
      expect(response.status).toBe(200)
    }
    const socket = await acknowledged(TRANSPORT_WS, { authToken: token })
    const ids = ['q1', 'q2', 'q3']
    for (const id of ids) {
      socket.send({ id, type: 'subscribe', payload: { query: '{ messages(limit: 1) { id } }' } })
    }
    const types = [...(await untilEnded(socket, ids)).values()].map(([first]) => first?.type)
    expect(types.sort()).toEqual(['error', 'next', 'next'])
  })

  it('anonymous operations over a WebSocket draw on the address’s budget, with HTTP', async () => {
    // The upgrade request is one of the address's 5, the HTTP request a second.
    const socket = await acknowledged(TRANSPORT_WS)
    expect((await graphql(server.baseUrl, '{ messages(limit: 1) { id } }')).status).toBe(200)
    const ids = ['q1', 'q2', 'q3', 'q4']
    for (const id of ids) {
      socket.send({ id, type: 'subscribe', payload: { query: '{ messages(limit: 1) { id } }' } })
    }
    const types = [...(await untilEnded(socket, ids)).values()].map(([first]) => first?.type)
    expect(types.sort()).toEqual(['error', 'next', 'next', 'next'])
  })
})
