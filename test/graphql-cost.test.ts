import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { messages } from '../src/db/schema.js'
import { LIMITS } from '../src/graphql/limits.js'
import { backends } from './helpers/backends.js'
import { graphql, wsUrl } from './helpers/graphql.js'
import { LEGACY_WS, openRawSocket, type RawSocket, TRANSPORT_WS } from './helpers/raw-socket.js'
import { startServer, type TestServer } from './helpers/server.js'

/**
 * What one document may ask of the server, on every path: a list costs its `limit` times
 * what is selected in it, and a document is read only up to 1000 tokens. The chat holds
 * the largest page the schema allows: 1000 messages of 4000 characters.
 */

const CHAT = 'long-chat'
const FIELDS = 'id text author createdAt chatId'
const PAGE = `{ messages(chatId: "${CHAT}", limit: 1000) { __typename ${FIELDS} } }`
const aliased = (limit: string, count = 20) =>
  Array.from(
    { length: count },
    (_, index) => `a${index}: messages(chatId: "${CHAT}", limit: ${limit}) { text }`,
  ).join(' ')
/** The attack of the report: 953 bytes that built 80 MB. */
const ATTACK = `{ ${aliased('1000')} }`
const BY_VARIABLE = `query Pages($n: Int!) { ${aliased('$n')} }`
const COST_OF_ATTACK = /^The operation costs 20000; the limit is 5000\./
const TOO_MANY_TOKENS = /Document contains more th.. 1000 tokens/
/** A distinct document of about 800 tokens: some 260 KB parsed. */
const bulky = (operation: string, index: number) =>
  `${operation} Bulky${index} { messages${operation === 'query' ? '' : 'Added'}(chatId: "c${index}") { ${'id '.repeat(800)} } }`

setFlagsFromString('--expose-gc')
const collectGarbage = runInNewContext('gc') as () => void
/** The heap in use once everything unreachable is gone. */
function liveHeapBytes() {
  collectGarbage()
  return process.memoryUsage().heapUsed
}

describe.each(backends)('GraphQL cost and document limits on $name', (backend) => {
  let server: TestServer
  const sockets: RawSocket[] = []

  beforeAll(async () => {
    server = await startServer(backend)
    const rows = Array.from({ length: 1000 }, (_, index) => ({
      chatId: CHAT,
      author: 'long-writer',
      text: `${index}`.padEnd(4000, '.'),
    }))
    await server.testDatabase.database.db.insert(messages).values(rows)
  })
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.ws.terminate()
  })
  afterAll(() => server?.close())

  async function acknowledged(protocol: typeof TRANSPORT_WS | typeof LEGACY_WS) {
    const socket = await openRawSocket(wsUrl(server.baseUrl), protocol)
    sockets.push(socket)
    socket.send({ type: 'connection_init' })
    expect(await socket.next()).toMatchObject({ type: 'connection_ack' })
    return socket
  }

  /** The first frame about operation `id` (legacy sockets also send keep-alives). */
  async function answerTo(socket: RawSocket, id: string) {
    for (;;) {
      const frame = await socket.next(10_000)
      if (frame.id === id) return frame
    }
  }

  describe('over HTTP', () => {
    it('serves the largest page of the schema: 1000 messages of 4000 characters, every field', async () => {
      const response = await graphql(server.baseUrl, PAGE)
      expect(response.body.errors).toBeUndefined()
      expect(response.body.data.messages).toHaveLength(1000)
      expect(response.body.data.messages[999].text).toHaveLength(4000)
    })

    it('refuses the page asked 20 times through aliases, before executing it', async () => {
      const response = await graphql(server.baseUrl, ATTACK)
      expect(response.status).toBe(400)
      expect(response.body).toEqual({
        errors: [
          expect.objectContaining({
            message: expect.stringMatching(COST_OF_ATTACK),
            extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
          }),
        ],
      })
    })

    it('counts a limit given by a variable with its value', async () => {
      const refused = await graphql(server.baseUrl, BY_VARIABLE, { n: 1000 })
      expect(refused.body.errors?.[0]?.message).toMatch(COST_OF_ATTACK)
      expect(refused.body.data).toBeUndefined()
      const served = await graphql(server.baseUrl, BY_VARIABLE, { n: 10 })
      expect(served.body.errors).toBeUndefined()
      expect(served.body.data.a19).toHaveLength(10)
      // Each cost is remembered per document and value: neither answer stands for the other.
      const again = await graphql(server.baseUrl, BY_VARIABLE, { n: 1000 })
      expect(again.body.errors?.[0]?.message).toMatch(COST_OF_ATTACK)
      const overByOne = await graphql(server.baseUrl, BY_VARIABLE, { n: 251 })
      expect(overByOne.body.errors?.[0]?.message).toMatch(/^The operation costs 5020;/)
    })

    it('counts a lookup by ids as long as its ids, literal or in a variable', async () => {
      const LOOKUP = `query($ids: [ID!]!) { users(ids: $ids) { name posts(limit: 100) { title body } } }`
      const ids = (count: number) => Array.from({ length: count }, (_, index) => String(index + 1))
      // 24 users × (1 + 100 × 2) = 4824: served; 25 × 201 = 5025: refused.
      const served = await graphql(server.baseUrl, LOOKUP, { ids: ids(24) })
      expect(served.body.errors).toBeUndefined()
      expect(served.body.data.users).toHaveLength(24)
      const refused = await graphql(server.baseUrl, LOOKUP, { ids: ids(25) })
      expect(refused.body.errors?.[0]?.message).toMatch(/^The operation costs 5025;/)
      const servedAgain = await graphql(server.baseUrl, LOOKUP, { ids: ids(24) })
      expect(servedAgain.body.errors).toBeUndefined()
      const literal = await graphql(
        server.baseUrl,
        '{ users(ids: ["1", "2"]) { name posts { title } } }',
      )
      expect(literal.body.errors).toBeUndefined()
    })

    it('counts fragments where they are spread, and the default limit of 100', async () => {
      const response = await graphql(
        server.baseUrl,
        `{ ...Page more: messages { ...Fields } }
        fragment Page on Query { messages(chatId: "${CHAT}", limit: 1000) { ...Fields } }
        fragment Fields on Message { ${FIELDS} }`,
      )
      expect(response.body.errors?.[0]?.message).toMatch(/^The operation costs 5500;/)
    })

    it('measures each fragment once: 40 fragments each spreading the next twice', async () => {
      const fragments = Array.from(
        { length: 40 },
        (_, index) => `fragment F${index} on Query { ...F${index + 1} ...F${index + 1} }`,
      )
      const response = await graphql(
        server.baseUrl,
        `{ ...F0 } ${fragments.join(' ')} fragment F40 on Query { messages(limit: 1) { id } }`,
      )
      expect(response.body.errors?.[0]?.message).toMatch(`costs ${2 ** 40};`)
    })

    it('stops reading an 870 KB document of directives at 1000 tokens', async () => {
      const huge = `{ messages ${'@a '.repeat(290_000)} { id } }`
      const response = await graphql(server.baseUrl, huge)
      expect(response.status).toBe(400)
      expect(response.body.errors).toEqual([
        expect.objectContaining({ message: expect.stringMatching(TOO_MANY_TOKENS) }),
      ])
    })
  })

  describe.each([
    { protocol: TRANSPORT_WS, start: 'subscribe', result: 'next' },
    { protocol: LEGACY_WS, start: 'start', result: 'data' },
  ] as const)('over $protocol', ({ protocol, start }) => {
    it('refuses the 20 aliases with an error for the operation, and keeps the socket', async () => {
      const socket = await acknowledged(protocol)
      socket.send({ id: 'attack', type: start, payload: { query: ATTACK } })
      const error = await answerTo(socket, 'attack')
      expect(error).toMatchObject({ type: 'error' })
      expect(error.payload).toEqual([
        expect.objectContaining({
          message: expect.stringMatching(COST_OF_ATTACK),
          extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
        }),
      ])
      socket.send({
        id: 'variables',
        type: start,
        payload: { query: BY_VARIABLE, variables: { n: 1000 } },
      })
      const byVariable = await answerTo(socket, 'variables')
      expect(byVariable).toMatchObject({ type: 'error' })
      expect(byVariable.payload[0].message).toMatch(COST_OF_ATTACK)
    })

    it('stops reading a 60 KB document of directives at 1000 tokens', async () => {
      const socket = await acknowledged(protocol)
      const huge = `subscription { messageAdded ${'@a '.repeat(20_000)} { id } }`
      socket.send({ id: 'huge', type: start, payload: { query: huge } })
      const error = await answerTo(socket, 'huge')
      expect(error).toMatchObject({ type: 'error' })
      expect(error.payload).toEqual([
        expect.objectContaining({ message: expect.stringMatching(TOO_MANY_TOKENS) }),
      ])
    })
  })

  // Only this subprotocol runs queries; a subscription's cost takes no variables.
  it('over graphql-transport-ws: checks each operation of a document seen before, with its variables', async () => {
    const socket = await acknowledged(TRANSPORT_WS)
    const pages = (id: string, n: number) =>
      socket.send({ id, type: 'subscribe', payload: { query: BY_VARIABLE, variables: { n } } })
    pages('small', 10)
    const served = await answerTo(socket, 'small')
    expect(served).toMatchObject({ type: 'next' })
    expect(served.payload.data.a19).toHaveLength(10)
    pages('large', 1000)
    const refused = await answerTo(socket, 'large')
    expect(refused).toMatchObject({ type: 'error' })
    expect(refused.payload[0].message).toMatch(COST_OF_ATTACK)
    pages('over-by-one', 251)
    expect((await answerTo(socket, 'over-by-one')).payload[0].message).toMatch(
      /^The operation costs 5020;/,
    )
    pages('small-again', 10)
    expect(await answerTo(socket, 'small-again')).toMatchObject({ type: 'next' })
    // A document refused once is refused again, by the same rule.
    for (const id of ['attack', 'attack-again']) {
      socket.send({ id, type: 'subscribe', payload: { query: ATTACK } })
      const error = await answerTo(socket, id)
      expect(error).toMatchObject({ type: 'error' })
      expect(error.payload[0].message).toMatch(COST_OF_ATTACK)
    }
  })

  it(`keeps at most ${LIMITS.documentsKept} distinct documents parsed, over HTTP and WebSocket`, async () => {
    const socket = await acknowledged(TRANSPORT_WS)
    const before = liveHeapBytes()
    for (let index = 0; index < 150; index += 1) {
      await graphql(server.baseUrl, bulky('query', index))
      socket.send({
        id: `s${index}`,
        type: 'subscribe',
        payload: { query: bulky('subscription', index) },
      })
      await answerTo(socket, `s${index}`)
    }
    // All 300 kept grew the heap by 78 MB; Mercurius's two LRUs of two generations and the
    // admission's hold 80 at most (9 to 11 MB).
    expect(liveHeapBytes() - before).toBeLessThan(40 * 1024 * 1024)
  })

  it('over graphql-transport-ws: serves the largest page', async () => {
    const socket = await acknowledged(TRANSPORT_WS)
    socket.send({ id: 'page', type: 'subscribe', payload: { query: PAGE } })
    const next = await answerTo(socket, 'page')
    expect(next).toMatchObject({ type: 'next' })
    expect(next.payload.data.messages).toHaveLength(1000)
  })
})
