import { randomUUID } from 'node:crypto'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { DomainModule } from '../src/domains/domain-module.js'
import { createDomainModules } from '../src/domains/module-list.js'
import { backends } from './helpers/backends.js'
import { graphql, subscriptionsActive, wsUrl } from './helpers/graphql.js'
import { LEGACY_WS, openRawSocket, type RawSocket, TRANSPORT_WS } from './helpers/raw-socket.js'
import { newUser, startServer, type TestServer } from './helpers/server.js'

/**
 * HTTP, graphql-transport-ws and the legacy graphql-ws subprotocol run one pipeline: the
 * same context (principal, request id, loaders) and the same checks. A test module sends
 * Message.author through a loader that records every call, as a later domain's relation
 * (User.posts…) will.
 */

interface Batch {
  size: number
  userId: number | null
  requestId: string
}

const AUTHOR_TWICE = 'a: author b: author'

describe.each(backends)('one GraphQL pipeline on $name', (backend) => {
  const batches: Batch[] = []
  const recordingAuthors: DomainModule = {
    name: 'recording-authors',
    loaders: {
      Message: {
        author: async (queries, context) => {
          batches.push({
            size: queries.length,
            userId: context.principal?.userId ?? null,
            requestId: context.requestId,
          })
          return queries.map(({ obj }) => obj.author)
        },
      },
    },
  }
  let server: TestServer
  let userId: number
  let token: string
  const sockets: RawSocket[] = []

  beforeAll(async () => {
    server = await startServer(
      backend,
      {},
      { modules: (infrastructure) => [...createDomainModules(infrastructure), recordingAuthors] },
    )
    const user = await newUser(server.api)
    userId = user.user.id
    token = user.accessToken
  })
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.ws.terminate()
  })
  afterAll(() => server?.close())

  async function send(chatId: string, text: string) {
    const response = await graphql(
      server.baseUrl,
      'mutation($chatId: ID!, $text: String!) { sendMessage(text: $text, author: "ann", chatId: $chatId) { id } }',
      { chatId, text },
    )
    expect(response.body.errors).toBeUndefined()
  }

  /** A socket of `protocol` whose subscription to `chatId` is live, its batches not counted yet. */
  async function subscribed(
    protocol: typeof TRANSPORT_WS | typeof LEGACY_WS,
    chatId: string,
    init: { payload?: Record<string, unknown>; headers?: Record<string, string> },
  ) {
    const socket = await openRawSocket(wsUrl(server.baseUrl), protocol, { headers: init.headers })
    sockets.push(socket)
    socket.send({ type: 'connection_init', ...(init.payload && { payload: init.payload }) })
    expect(await socket.next()).toMatchObject({ type: 'connection_ack' })
    const live = server.events.activeSubscriptions() + 1
    const query = `subscription { messageAdded(chatId: "${chatId}") { ${AUTHOR_TWICE} } }`
    socket.send({
      id: '1',
      type: protocol === LEGACY_WS ? 'start' : 'subscribe',
      payload: { query },
    })
    await subscriptionsActive(server.events, live)
    batches.length = 0
    return socket
  }

  it('over HTTP: one batch for every use in the operation, with its principal and request id', async () => {
    for (const text of ['one', 'two', 'three']) await send('pipeline-http', text)
    batches.length = 0
    const requestId = randomUUID()
    const response = await fetch(`${server.baseUrl}/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${token}`,
        'x-request-id': requestId,
      },
      body: JSON.stringify({ query: `{ messages(chatId: "pipeline-http") { ${AUTHOR_TWICE} } }` }),
    })
    const body = (await response.json()) as { data: { messages: unknown[] } }
    expect(body.data.messages).toEqual(Array(3).fill({ a: 'ann', b: 'ann' }))
    expect(batches).toEqual([{ size: 6, userId, requestId }])
  })

  it('over graphql-transport-ws: batches inside each event, fresh for every event', async () => {
    const requestId = randomUUID()
    const socket = await subscribed(TRANSPORT_WS, 'pipeline-ws', {
      payload: { authToken: token },
      headers: { 'x-request-id': requestId },
    })
    await send('pipeline-ws', 'first')
    await send('pipeline-ws', 'second')
    for (let event = 0; event < 2; event += 1) {
      expect(await socket.next()).toEqual({
        id: '1',
        type: 'next',
        payload: { data: { messageAdded: { a: 'ann', b: 'ann' } } },
      })
    }
    // Nothing is cached across events: each event reads its data anew.
    expect(batches).toEqual([
      { size: 2, userId, requestId },
      { size: 2, userId, requestId },
    ])
  })

  it('over legacy graphql-ws: the same batching, with the authToken of connection_init', async () => {
    const requestId = randomUUID()
    const socket = await subscribed(LEGACY_WS, 'pipeline-legacy', {
      payload: { authToken: token },
      headers: { 'x-request-id': requestId },
    })
    await send('pipeline-legacy', 'legacy')
    expect(await socket.next()).toMatchObject({
      id: '1',
      type: 'data',
      payload: { data: { messageAdded: { a: 'ann', b: 'ann' } } },
    })
    expect(batches).toEqual([{ size: 2, userId, requestId }])
  })

  it('over legacy graphql-ws: honours Authorization: Bearer on the upgrade request', async () => {
    const socket = await subscribed(LEGACY_WS, 'pipeline-legacy-header', {
      headers: { authorization: `Bearer ${token}` },
    })
    await send('pipeline-legacy-header', 'by header')
    expect(await socket.next()).toMatchObject({ id: '1', type: 'data' })
    expect(batches).toEqual([{ size: 2, userId, requestId: expect.any(String) }])
  })

  it('over legacy graphql-ws: closes with 4403 on a refused Authorization header', async () => {
    const socket = await openRawSocket(wsUrl(server.baseUrl), LEGACY_WS, {
      headers: { authorization: 'Bearer not-a-token' },
    })
    sockets.push(socket)
    expect(await socket.closed).toMatchObject({ code: 4403 })
    expect(socket.frames).toEqual([])
  })

  it('anonymous on every path: the context has no principal', async () => {
    const socket = await subscribed(TRANSPORT_WS, 'pipeline-anonymous', {})
    await send('pipeline-anonymous', 'anyone')
    expect(await socket.next()).toMatchObject({ type: 'next' })
    const response = await graphql(
      server.baseUrl,
      `{ messages(chatId: "pipeline-anonymous") { a: author } }`,
    )
    expect(response.body.data.messages).toEqual([{ a: 'ann' }])
    expect(batches.map((batch) => batch.userId)).toEqual([null, null])
  })
})

describe.each(backends)('introspection on $name', (backend) => {
  const INTROSPECTION = '{ __schema { queryType { name } } }'

  /** What each path answers an introspection query: the data, or the error's code. */
  async function answers(server: TestServer) {
    const http = await graphql(server.baseUrl, INTROSPECTION)
    const socket = await openRawSocket(wsUrl(server.baseUrl), TRANSPORT_WS)
    socket.send({ type: 'connection_init' })
    await socket.next()
    socket.send({ id: '1', type: 'subscribe', payload: { query: INTROSPECTION } })
    const frame = await socket.next()
    socket.ws.terminate()
    const overWebSocket =
      frame.type === 'next' ? frame.payload.data : frame.payload?.[0]?.extensions?.code
    return [http.body.data ?? http.body.errors?.[0]?.extensions?.code, overWebSocket]
  }

  it.each([
    ['answers it by default', {}, { __schema: { queryType: { name: 'Query' } } }],
    [
      'refuses it on every path with GRAPHQL_INTROSPECTION=false',
      { GRAPHQL_INTROSPECTION: 'false' },
      'GRAPHQL_VALIDATION_FAILED',
    ],
  ])('%s', async (_, environment, expected) => {
    const server = await startServer(backend, environment)
    try {
      expect(await answers(server)).toEqual([expected, expected])
    } finally {
      await server.close()
    }
  })
})
