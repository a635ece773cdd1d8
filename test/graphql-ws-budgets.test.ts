import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config.js'
import { LIMITS } from '../src/graphql/limits.js'
import { backends } from './helpers/backends.js'
import { subscriptionsActive, wsUrl } from './helpers/graphql.js'
import {
  type Closed,
  LEGACY_WS,
  openRawSocket,
  type RawSocket,
  TRANSPORT_WS,
} from './helpers/raw-socket.js'
import { freshAccount, startServer, type TestServer } from './helpers/server.js'

/**
 * What one WebSocket, and one caller's WebSockets, may hold: a connection_init in time,
 * LIMITS.subscriptionsPerSocket live subscriptions, WS_SOCKETS_PER_CALLER open sockets
 * (50 by default) per user, or per address before a socket proves a user.
 */

const SOCKETS_PER_CALLER = loadConfig({}).socketsPerCaller ?? 0
const SUBSCRIPTIONS = LIMITS.subscriptionsPerSocket
const TRY_AGAIN_LATER = 1013
const SUBSCRIBE = 'subscription { messageAdded(chatId: "budgets") { id } }'

const PROTOCOLS = [
  { protocol: TRANSPORT_WS, start: 'subscribe', stop: 'complete' },
  { protocol: LEGACY_WS, start: 'start', stop: 'stop' },
] as const

describe.each(backends)('WebSocket budgets on $name', (backend) => {
  let server: TestServer
  const sockets: RawSocket[] = []

  beforeAll(async () => {
    // The socket cap is a per-caller budget: on only with a rate limit.
    server = await startServer(backend, { RATE_LIMIT_MAX: '100000' })
  })
  afterEach(async () => {
    const closing = sockets.splice(0)
    for (const socket of closing) socket.ws.close()
    await Promise.all(closing.map((socket) => socket.closed))
    await expect.poll(() => server.events.activeSubscriptions()).toBe(0)
  })
  afterAll(() => server?.close())

  async function open(protocol: string, headers: Record<string, string> = {}) {
    const socket = await openRawSocket(wsUrl(server.baseUrl), protocol, { headers })
    sockets.push(socket)
    return socket
  }

  async function acknowledged(protocol: string, payload: Record<string, unknown> = {}) {
    const socket = await open(protocol)
    socket.send({ type: 'connection_init', payload })
    expect(await socket.next()).toMatchObject({ type: 'connection_ack' })
    return socket
  }

  const closeOf = (socket: RawSocket, timeoutMs: number) =>
    Promise.race([
      socket.closed,
      new Promise<Closed>((_, reject) =>
        setTimeout(() => reject(new Error(`still open after ${timeoutMs} ms`)), timeoutMs),
      ),
    ])

  it('legacy graphql-ws: closes with 4408 a socket that sends no connection_init in time', async () => {
    const socket = await open(LEGACY_WS)
    const closed = await closeOf(socket, LIMITS.connectionInitMs + 5000)
    expect(closed).toEqual({ code: 4408, reason: 'Connection initialisation timeout' })
    expect(socket.frames).toEqual([])
  }, 15_000)

  it.each(PROTOCOLS)(
    '$protocol: refuses the subscription beyond the socket’s share, until one ends',
    async ({ protocol, start, stop }) => {
      const socket = await acknowledged(protocol)
      for (let index = 0; index < SUBSCRIPTIONS; index += 1) {
        socket.send({ id: `s${index}`, type: start, payload: { query: SUBSCRIBE } })
      }
      await subscriptionsActive(server.events, SUBSCRIPTIONS)
      socket.send({ id: 'over', type: start, payload: { query: SUBSCRIBE } })
      const refusal = await socket.next()
      expect(refusal).toMatchObject({ id: 'over' })
      const errors = refusal.type === 'error' ? refusal.payload : refusal.payload.errors
      expect(errors).toEqual([
        expect.objectContaining({
          message: `This socket already runs ${SUBSCRIPTIONS} subscriptions; complete one before starting another`,
          extensions: { code: 'TOO_MANY_SUBSCRIPTIONS' },
        }),
      ])
      expect(server.events.activeSubscriptions()).toBe(SUBSCRIPTIONS)

      socket.send({ id: 's0', type: stop })
      await expect.poll(() => server.events.activeSubscriptions()).toBe(SUBSCRIPTIONS - 1)
      socket.send({ id: 'again', type: start, payload: { query: SUBSCRIBE } })
      await subscriptionsActive(server.events, SUBSCRIPTIONS)
    },
  )

  it.each(PROTOCOLS)(
    '$protocol: an id started again while live closes the socket (4409), ending both',
    async ({ protocol, start }) => {
      const socket = await acknowledged(protocol)
      socket.send({ id: 'same', type: start, payload: { query: SUBSCRIBE } })
      await subscriptionsActive(server.events, 1)
      for (let index = 0; index < 150; index += 1) {
        socket.send({ id: 'same', type: start, payload: { query: SUBSCRIBE } })
      }
      expect((await closeOf(socket, 5000)).code).toBe(4409)
      await expect.poll(() => server.events.activeSubscriptions()).toBe(0)
    },
  )

  it.each(PROTOCOLS)(
    '$protocol: closes the caller’s socket beyond its share with 1013, until one closes',
    async ({ protocol }) => {
      for (let index = 0; index < SOCKETS_PER_CALLER; index += 1) await open(protocol)
      const over = await open(protocol)
      expect(await closeOf(over, 5000)).toEqual({
        code: TRY_AGAIN_LATER,
        reason: 'Too many connections',
      })
      const first = sockets[0] as RawSocket
      first.ws.close()
      await first.closed
      await acknowledged(protocol)
    },
  )

  it.each(PROTOCOLS)(
    '$protocol: counts a socket by its user once connection_init proves one',
    async ({ protocol }) => {
      const { accessToken: token } = await freshAccount(server)
      // Each leaves the address's share for the user's once acknowledged.
      for (let index = 0; index < SOCKETS_PER_CALLER; index += 1) {
        await acknowledged(protocol, { authToken: token })
      }
      const anonymous = await acknowledged(protocol)
      const byHeader = await open(protocol, { authorization: `Bearer ${token}` })
      expect(await closeOf(byHeader, 5000)).toMatchObject({ code: TRY_AGAIN_LATER })
      const byInit = await open(protocol)
      byInit.send({ type: 'connection_init', payload: { authToken: token } })
      expect(await closeOf(byInit, 5000)).toEqual({
        code: TRY_AGAIN_LATER,
        reason: 'Too many connections',
      })
      expect(anonymous.ws.readyState).toBe(anonymous.ws.OPEN)
    },
  )
})
