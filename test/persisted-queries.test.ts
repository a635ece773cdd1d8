import { ApolloClient, ApolloLink, gql, HttpLink, InMemoryCache } from '@apollo/client'
import { createPersistedQueryLink } from '@apollo/client/link/persisted-queries'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { LIMITS } from '../src/graphql/limits.js'
import { backends } from './helpers/backends.js'
import { graphql } from './helpers/graphql.js'
import {
  acknowledgedSocket,
  get,
  overSocket,
  persistedQuery,
  post,
  SUBPROTOCOLS,
  sha256,
} from './helpers/persisted.js'
import type { RawSocket } from './helpers/raw-socket.js'
import { startServer, type TestServer } from './helpers/server.js'

const CHAT = 'apq'
/** A query of its own per test: each registers it afresh. */
const messagesQuery = (name: string) =>
  gql(`
  query ChatMessages${name}($chatId: ID) {
    messages(chatId: $chatId) {
      id
      text
    }
  }
`)

/** What each request of Apollo Client sent, and whether the server knew its hash. */
interface Sent {
  method: string
  withQuery: boolean
  missed: boolean
}

/** Apollo Client 4 with its persisted-queries link, over a fetch that records each request. */
function apolloClient(baseUrl: string, useGETForHashedQueries: boolean) {
  const sent: Sent[] = []
  const recording: typeof fetch = async (input, init) => {
    const method = init?.method ?? 'GET'
    const withQuery =
      method === 'GET'
        ? new URL(String(input)).searchParams.has('query')
        : 'query' in JSON.parse(String(init?.body))
    const response = await fetch(input, init)
    const missed = (await response.clone().text()).includes('PERSISTED_QUERY_NOT_FOUND')
    sent.push({ method, withQuery, missed })
    return response
  }
  const link = ApolloLink.from([
    createPersistedQueryLink({ sha256, useGETForHashedQueries }),
    new HttpLink({ uri: `${baseUrl}/graphql`, fetch: recording }),
  ])
  return { client: new ApolloClient({ link, cache: new InMemoryCache() }), sent }
}

const RUNS = 50

describe.each(backends)('automatic persisted queries on $name', (backend) => {
  let server: TestServer
  const sockets: RawSocket[] = []

  beforeAll(async () => {
    server = await startServer(backend)
    const sent = await graphql(
      server.baseUrl,
      `mutation { sendMessage(text: "persisted", author: "apq", chatId: "${CHAT}") { id } }`,
    )
    expect(sent.body.errors).toBeUndefined()
  })
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.ws.terminate()
  })
  afterAll(() => server?.close())

  it.each([
    ['POST', false],
    ['GET', true],
  ])(
    'serves Apollo Client persisted queries over %s: one miss, then hashes only',
    async (method, useGET) => {
      const { client, sent } = apolloClient(server.baseUrl, useGET)
      for (let run = 0; run < RUNS; run++) {
        const { data } = await client.query({
          query: messagesQuery(method),
          variables: { chatId: `${CHAT}` },
          fetchPolicy: 'network-only',
        })
        expect(data).toMatchObject({ messages: [{ text: 'persisted' }] })
      }
      // Its first request missed, its retry sent the text (by POST) and registered it.
      expect(sent.slice(0, 2)).toEqual([
        { method, withQuery: false, missed: true },
        { method: 'POST', withQuery: true, missed: false },
      ])
      expect(sent.slice(2)).toEqual(
        Array.from({ length: RUNS - 1 }, () => ({ method, withQuery: false, missed: false })),
      )
      const hits = sent.filter((request) => !request.withQuery && !request.missed).length
      console.info(
        `APQ hit ratio over ${method}, ${RUNS} runs of one query: ${hits}/${RUNS} ` +
          `(${sent.length} requests, ${sent.filter((r) => !r.withQuery).length} without the text)`,
      )
    },
  )

  it.each(SUBPROTOCOLS)('registers and runs by hash over $protocol', async (subprotocol) => {
    const query = `query { messages(chatId: "${CHAT}") { text } } # ${subprotocol.protocol}`
    const socket = await acknowledgedSocket(server.baseUrl, subprotocol)
    sockets.push(socket)
    const byHash = { extensions: persistedQuery(sha256(query)) }
    const missed = await overSocket(socket, subprotocol, byHash)
    expect(missed.body.errors).toEqual([
      { message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } },
    ])
    const registered = await overSocket(socket, subprotocol, { query, ...byHash })
    expect(registered.body.data).toEqual({ messages: [{ text: 'persisted' }] })
    // Registered over a socket, it runs by hash over HTTP as well, and the other way.
    expect((await post(server.baseUrl, byHash)).body.data).toEqual(registered.body.data)
    expect((await overSocket(socket, subprotocol, byHash)).body).toEqual(registered.body)
  })

  it('keeps no document that its checks refuse, nor one longer than the limit', async () => {
    const unknownField = 'query { nothingHere }'
    const refused = await post(server.baseUrl, {
      query: unknownField,
      extensions: persistedQuery(sha256(unknownField)),
    })
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED')
    const long = `query { messages(chatId: "none") { id } } ${'#'.repeat(LIMITS.persistedQueryBytes)}`
    const ran = await post(server.baseUrl, {
      query: long,
      extensions: persistedQuery(sha256(long)),
    })
    expect(ran.body).toEqual({ data: { messages: [] } })
    for (const query of [unknownField, long]) {
      const again = await post(server.baseUrl, { extensions: persistedQuery(sha256(query)) })
      expect(again.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND')
    }
  })

  describe('bad input: the documented error, and nothing run or stored', () => {
    const query = `query { messages(chatId: "${CHAT}") { id } }`
    const hash = sha256(query)

    /** The hash still misses: nothing was stored. */
    const stillUnknown = async () => {
      const answer = await post(server.baseUrl, { extensions: persistedQuery(hash) })
      expect(answer).toEqual({
        status: 200,
        body: {
          errors: [
            {
              message: 'PersistedQueryNotFound',
              extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' },
            },
          ],
        },
      })
    }

    it('answers a hash that is not the SHA-256 of its query 400 PERSISTED_QUERY_HASH_MISMATCH', async () => {
      const answer = await post(server.baseUrl, {
        query,
        extensions: persistedQuery(sha256(`${query} `)),
      })
      expect(answer.status).toBe(400)
      expect(answer.body.errors?.[0]?.extensions).toEqual({ code: 'PERSISTED_QUERY_HASH_MISMATCH' })
      expect(answer.body.data).toBeUndefined()
      // Under the hash it named, nothing either.
      const named = await post(server.baseUrl, {
        extensions: persistedQuery(sha256(`${query} `)),
      })
      expect(named.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND')
      await stillUnknown()
    })

    it.each([
      ['a hash that is not 64 hex digits', { query, extensions: persistedQuery(hash.slice(1)) }],
      [
        'a hash in base64',
        { extensions: persistedQuery(Buffer.from(hash, 'hex').toString('base64')) },
      ],
      ['a hash that is no string', { query, extensions: persistedQuery(7) }],
      ['version 2', { query, extensions: persistedQuery(hash, 2) }],
      ['no version', { query, extensions: { persistedQuery: { sha256Hash: hash } } }],
      ['a persistedQuery that is no object', { query, extensions: { persistedQuery: hash } }],
      ['a documentId that is not a hash', { documentId: 'ChatMessages' }],
      ['a documentId beside a query', { documentId: hash, query }],
    ])('answers %s 400 PERSISTED_QUERY_INVALID, in words', async (_case, body) => {
      const answer = await post(server.baseUrl, body)
      expect(answer.status).toBe(400)
      const [error] = answer.body.errors ?? []
      expect(error?.extensions).toEqual({ code: 'PERSISTED_QUERY_INVALID' })
      expect(error?.message).toMatch(/persistedQuery|documentId/)
      await stillUnknown()
    })

    it('answers a documentId it does not know as a hash it does not know', async () => {
      expect((await post(server.baseUrl, { documentId: hash })).body.errors?.[0]).toEqual({
        message: 'PersistedQueryNotFound',
        extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' },
      })
    })

    it('answers the same over GET and both subprotocols', async () => {
      const bad = { query, extensions: persistedQuery(hash, 2) }
      const overGet = await get(server.baseUrl, bad)
      expect(overGet.status).toBe(400)
      expect(overGet.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_INVALID')
      for (const subprotocol of SUBPROTOCOLS) {
        const socket = await acknowledgedSocket(server.baseUrl, subprotocol)
        sockets.push(socket)
        const mismatch = { query, extensions: persistedQuery(sha256('another')) }
        for (const [payload, code] of [
          [bad, 'PERSISTED_QUERY_INVALID'],
          [mismatch, 'PERSISTED_QUERY_HASH_MISMATCH'],
        ] as const) {
          const answer = await overSocket(socket, subprotocol, payload)
          expect(answer).toMatchObject({
            type: 'error',
            body: { errors: [{ extensions: { code } }] },
          })
        }
      }
      await stillUnknown()
    })
  })
})
