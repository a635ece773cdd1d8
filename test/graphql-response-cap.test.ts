import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { DomainModule } from '../src/domains/domain-module.js'
import { createDomainModules } from '../src/domains/module-list.js'
import { LIMITS } from '../src/graphql/limits.js'
import { backends } from './helpers/backends.js'
import { graphql, subscriptionsActive, wsUrl } from './helpers/graphql.js'
import { LEGACY_WS, openRawSocket, type RawSocket, TRANSPORT_WS } from './helpers/raw-socket.js'
import { startServer, type TestServer } from './helpers/server.js'

/**
 * No response leaves the server over LIMITS.responseBytes, on HTTP or in a WebSocket
 * result: the client gets RESPONSE_TOO_LARGE instead. A test module resolves the text
 * "huge" to one byte more than the cap, as a future list without a tight cost could.
 */

const TOO_LARGE = {
  data: null,
  errors: [
    {
      message: expect.stringMatching(
        new RegExp(`^The response is \\d+ bytes; the limit is ${LIMITS.responseBytes}:`),
      ),
      extensions: { code: 'RESPONSE_TOO_LARGE' },
    },
  ],
}

describe.each(backends)('the response cap on $name', (backend) => {
  const inflating: DomainModule = {
    name: 'inflating-texts',
    resolvers: {
      Message: {
        text: (row) => (row.text === 'huge' ? 'x'.repeat(LIMITS.responseBytes + 1) : row.text),
      },
    },
  }
  let server: TestServer
  const sockets: RawSocket[] = []

  beforeAll(async () => {
    server = await startServer(
      backend,
      {},
      { modules: (infrastructure) => [...createDomainModules(infrastructure), inflating] },
    )
    for (const text of ['huge', 'small']) await send(text, 'cap')
  })
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.ws.terminate()
  })
  afterAll(() => server?.close())

  async function send(text: string, chatId: string) {
    const response = await graphql(
      server.baseUrl,
      'mutation($text: String!, $chatId: ID!) { sendMessage(text: $text, author: "cap", chatId: $chatId) { id } }',
      { text, chatId },
    )
    expect(response.body.errors).toBeUndefined()
  }

  async function acknowledged(protocol: typeof TRANSPORT_WS | typeof LEGACY_WS) {
    const socket = await openRawSocket(wsUrl(server.baseUrl), protocol)
    sockets.push(socket)
    socket.send({ type: 'connection_init' })
    expect(await socket.next()).toMatchObject({ type: 'connection_ack' })
    return socket
  }

  it('over HTTP: answers RESPONSE_TOO_LARGE instead of the payload', async () => {
    const response = await graphql(server.baseUrl, '{ messages(chatId: "cap") { text } }')
    expect(response.status).toBe(200)
    expect(response.body).toEqual(TOO_LARGE)
    const small = await graphql(server.baseUrl, '{ messages(chatId: "cap", limit: 1) { text } }')
    expect(small.body).toEqual({ data: { messages: [{ text: 'small' }] } })
  })

  it('over graphql-transport-ws: a query’s result is the error, then complete', async () => {
    const socket = await acknowledged(TRANSPORT_WS)
    socket.send({
      id: 'q',
      type: 'subscribe',
      payload: { query: '{ messages(chatId: "cap") { text } }' },
    })
    expect(await socket.next(10_000)).toEqual({ id: 'q', type: 'next', payload: TOO_LARGE })
    expect(await socket.next()).toEqual({ id: 'q', type: 'complete' })
  })

  it.each([
    { protocol: TRANSPORT_WS, start: 'subscribe', result: 'next' },
    { protocol: LEGACY_WS, start: 'start', result: 'data' },
  ] as const)(
    'over $protocol: an event over the cap is an error, the next event arrives',
    async ({ protocol, start, result }) => {
      const chatId = `cap-${protocol}`
      const socket = await acknowledged(protocol)
      const live = server.events.activeSubscriptions() + 1
      socket.send({
        id: 's',
        type: start,
        payload: { query: `subscription { messageAdded(chatId: "${chatId}") { text } }` },
      })
      await subscriptionsActive(server.events, live)
      await send('huge', chatId)
      await send('after', chatId)
      expect(await socket.next(10_000)).toEqual({ id: 's', type: result, payload: TOO_LARGE })
      expect(await socket.next()).toEqual({
        id: 's',
        type: result,
        payload: { data: { messageAdded: { text: 'after' } } },
      })
    },
  )
})
