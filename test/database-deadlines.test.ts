import { once } from 'node:events'
import { createServer, type Server, type Socket } from 'node:net'
import { sql } from 'drizzle-orm'
import postgresClient from 'postgres'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { openDatabase } from '../src/db/client.js'
import { withDeadlines } from '../src/db/deadlines.js'
import { MessageFramer, SilenceWatchedSocket } from '../src/db/silence-watch.js'
import { rowsOf } from '../src/db/statement-rows.js'
import { backends, type TestDatabase } from './helpers/backends.js'
import { holdTheLoop } from './helpers/hold-the-loop.js'
import { type RelayedDatabase, relayedDatabase } from './helpers/relayed-database.js'
import { type TcpRelay, tcpRelay } from './helpers/tcp-relay.js'

/**
 * The database's silence has a deadline once a connection has asked something: the
 * messages are counted however the network splits them, an idle connection is never
 * taken for a silent one, and a silent one is closed. Over TLS, each statement has a
 * deadline of its own instead.
 */

const message = (type: string, body: Buffer = Buffer.alloc(0)) => {
  const header = Buffer.alloc(5)
  header.write(type, 0, 'latin1')
  header.writeUInt32BE(body.length + 4, 1)
  return Buffer.concat([header, body])
}
const readyForQuery = () => message('Z', Buffer.from('I'))
const dataRow = (text: string) => message('D', Buffer.from(`\u0000\u0001${text}`))
/** A start-up message, which has no type byte: its length, then its body. */
const startup = () => {
  const body = Buffer.from('user\u0000postgres\u0000\u0000')
  const length = Buffer.alloc(4)
  length.writeUInt32BE(body.length + 4)
  return Buffer.concat([length, body])
}

/** A server's answer to a query: rows whose bytes look like headers, then ReadyForQuery. */
const answer = Buffer.concat([
  message('T', Buffer.from('row description')),
  dataRow('Z\u0000\u0000\u0000\u0005I'),
  dataRow('another row'),
  message('C', Buffer.from('SELECT 2\u0000')),
  readyForQuery(),
])

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A fake database on a free local port, serving each connection with `serve`. */
async function listenOn(serve: (connection: Socket) => void): Promise<Server> {
  const server = createServer(serve)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return server
}

describe('MessageFramer', () => {
  /** How many ReadyForQuery messages end in each chunk. */
  const readyCounts = (chunks: Buffer[]) => {
    const framer = new MessageFramer()
    return chunks.map((chunk) => {
      let ready = 0
      framer.read(chunk, (type) => {
        if (type === 'Z'.charCodeAt(0)) ready++
      })
      return ready
    })
  }

  it('names a ReadyForQuery in the chunk that ends it, wherever the stream is split', () => {
    const stream = Buffer.concat([answer, answer])
    for (let split = 1; split < stream.length; split++) {
      const counts = readyCounts([stream.subarray(0, split), stream.subarray(split)])
      const endsFirst = split >= answer.length
      expect(counts, `split at ${split}`).toEqual(endsFirst ? [1, 1] : [0, 2])
    }
  })

  it('names every message, in order, across a stream cut into single bytes', () => {
    const framer = new MessageFramer()
    const types: string[] = []
    for (const each of Buffer.concat([answer, answer])) {
      framer.read(Buffer.of(each), (type) => types.push(String.fromCharCode(type)))
    }
    expect(types.join('')).toBe('TDDCZTDDCZ')
  })

  it('names none in rows that hold the bytes of one', () => {
    expect(readyCounts([dataRow('Z\u0000\u0000\u0000\u0005I')])).toEqual([0])
  })
})

describe('SilenceWatchedSocket', () => {
  const DEADLINE_MS = 300
  let server: Server
  let port: number
  /** What the fake database does with what it receives after the start-up. */
  let onReceived: (connection: Socket, chunk: Buffer) => void
  const sockets: Socket[] = []

  beforeAll(async () => {
    server = await listenOn((connection) => {
      let started = false
      connection.on('data', (chunk: Buffer) => {
        if (started) return onReceived(connection, chunk)
        started = true
        connection.write(readyForQuery())
      })
    })
    port = (server.address() as { port: number }).port
  })
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.destroy()
  })
  afterAll(() => new Promise((resolve) => server.close(resolve)))

  /** Hands each Query received to `answer`, numbered from 1. */
  const onEachQuery = (answer: (connection: Socket, queries: number) => void) => {
    let queries = 0
    onReceived = (connection, chunk) => {
      const received = chunk.toString('latin1').split('Q').length - 1
      for (let each = 0; each < received; each++) answer(connection, ++queries)
    }
  }

  async function connected() {
    const socket = new SilenceWatchedSocket(DEADLINE_MS).connect(port, '127.0.0.1')
    sockets.push(socket)
    socket.write(startup())
    await once(socket, 'data')
    return socket
  }
  const query = () => message('Q', Buffer.from('select 1\u0000'))

  it('keeps a connection that was answered, idle past the deadline', async () => {
    onEachQuery((connection) => connection.write(answer))
    const socket = await connected()
    socket.write(query())
    await once(socket, 'data')
    await sleep(DEADLINE_MS * 2)
    expect(socket.destroyed).toBe(false)
  })

  it('keeps a connection whose answer is slow but keeps coming', async () => {
    // Three parts, each within the deadline of the one before, all three past it.
    onEachQuery((connection) => {
      const parts = [answer.subarray(0, 20), answer.subarray(20, 40), answer.subarray(40)]
      parts.forEach((part, index) => {
        setTimeout(() => connection.write(part), index * DEADLINE_MS * 0.7)
      })
    })
    const socket = await connected()
    socket.write(query())
    await sleep(DEADLINE_MS * 2)
    expect(socket.destroyed).toBe(false)
  })

  it('closes a connection left without an answer, without an error', async () => {
    onEachQuery(() => {})
    const socket = await connected()
    const errors: Error[] = []
    socket.on('error', (error) => errors.push(error))
    const asked = performance.now()
    socket.write(query())
    await once(socket, 'close')
    expect(performance.now() - asked).toBeGreaterThanOrEqual(DEADLINE_MS - 5)
    expect(errors).toEqual([])
  })

  it('waits for every answer when queries are pipelined', async () => {
    // The first query is answered, the second never is.
    onEachQuery((connection, queries) => {
      if (queries === 1) connection.write(answer)
    })
    const socket = await connected()
    socket.write(Buffer.concat([query(), query()]))
    await once(socket, 'close')
    expect(socket.destroyed).toBe(true)
  })

  // How postgres.js first runs a statement with parameters on a connection: it asks for
  // the statement's description and flushes, and binds only once that has come.
  const describeAndFlush = () =>
    Buffer.concat([
      message('P', Buffer.from('\u0000select $1\u0000\u0000\u0000')),
      message('D', Buffer.from('S\u0000')),
      message('H'),
    ])
  const description = Buffer.concat([
    message('1'),
    message('t', Buffer.from([0, 1, 0, 0, 0, 23])),
    message('T', Buffer.from('row description')),
  ])

  it('closes a connection whose statement description is left unanswered', async () => {
    onReceived = () => {}
    const socket = await connected()
    const asked = performance.now()
    socket.write(describeAndFlush())
    await once(socket, 'close')
    expect(performance.now() - asked).toBeGreaterThanOrEqual(DEADLINE_MS - 5)
  })

  it('keeps a connection whose statement was described, idle past the deadline', async () => {
    onReceived = (connection) => connection.write(description)
    const socket = await connected()
    socket.write(describeAndFlush())
    await once(socket, 'data')
    await sleep(DEADLINE_MS * 2)
    expect(socket.destroyed).toBe(false)
  })

  it('takes an error in a description as its end', async () => {
    onReceived = (connection) => connection.write(message('E', Buffer.from('SERROR\u0000\u0000')))
    const socket = await connected()
    socket.write(describeAndFlush())
    await once(socket, 'data')
    await sleep(DEADLINE_MS * 2)
    expect(socket.destroyed).toBe(false)
  })
})

describe("the service's client on a database that goes silent", () => {
  let server: Server
  let url: string

  beforeAll(async () => {
    // It lets the client in, then answers nothing more.
    server = await listenOn((connection) => {
      const authenticated = message('R', Buffer.alloc(4))
      connection.once('data', () =>
        connection.write(Buffer.concat([authenticated, readyForQuery()])),
      )
    })
    url = `postgres://postgres@127.0.0.1:${(server.address() as { port: number }).port}/test`
  })
  afterAll(() => new Promise((resolve) => server.close(resolve)))

  it('fails the statement once the deadline passes, and leaves nothing unhandled', async () => {
    const timeoutMs = 200
    const database = await openDatabase({
      databaseUrl: url,
      dataDir: 'unused',
      databaseTimeoutMs: timeoutMs,
    })
    const started = performance.now()
    await expect(database.db.execute(sql`select 1`)).rejects.toMatchObject({
      cause: { code: 'CONNECTION_CLOSED' },
    })
    // The deadline is the statement timeout and a second more.
    expect(performance.now() - started).toBeGreaterThanOrEqual(timeoutMs + 1000 - 5)
    await database.close()
  })
})

const postgres = backends.find((backend) => backend.name === 'postgres')

describe.runIf(postgres)('the watch on Postgres connections', () => {
  let database: TestDatabase
  const DATABASE_TIMEOUT_MS = 300

  beforeAll(async () => {
    database = await (postgres as NonNullable<typeof postgres>).open({
      databaseTimeoutMs: DATABASE_TIMEOUT_MS,
    })
  })
  afterAll(() => database?.drop())

  const backendPid = async () =>
    rowsOf<{ pid: number }>(
      await database.database.db.execute(sql`select pg_backend_pid() as pid`),
    )[0]?.pid

  it('keeps an idle connection open long past the deadline', async () => {
    const first = await backendPid()
    // The deadline is the statement timeout and a second more.
    await new Promise((resolve) => setTimeout(resolve, DATABASE_TIMEOUT_MS + 1500))
    expect(await backendPid()).toBe(first)
  })

  it('takes the answer that came while this process was held up past the deadline', async () => {
    const first = await backendPid()
    // Drizzle runs a statement once it is awaited, or then'd.
    const answeredBy = database.database.db
      .execute(sql`select pg_backend_pid() as pid from pg_sleep(0.2)`)
      .then((result) => rowsOf<{ pid: number }>(result)[0]?.pid)
    // Sent (postgres.js writes in an immediate), and not answered yet.
    await new Promise((resolve) => setTimeout(resolve, 50))
    await holdTheLoop(DATABASE_TIMEOUT_MS + 1000 + 500)
    expect(await answeredBy).toBe(first)
  })

  it('leaves a statement that runs too long to the server, and keeps the connection', async () => {
    const first = await backendPid()
    await expect(
      database.database.db.execute(sql`select pg_sleep(${(DATABASE_TIMEOUT_MS * 3) / 1000})`),
    ).rejects.toMatchObject({ cause: { code: '57014' } })
    expect(await backendPid()).toBe(first)
  })
})

describe.runIf(postgres)("the service's client when Postgres goes silent", () => {
  const DATABASE_TIMEOUT_MS = 300
  let relayed: RelayedDatabase

  beforeAll(async () => {
    relayed = await relayedDatabase(postgres as NonNullable<typeof postgres>, DATABASE_TIMEOUT_MS)
  })
  afterAll(() => relayed?.close())

  it('fails a statement whose description the connection is still waiting for', async () => {
    const { database, relay } = relayed
    await database.db.execute(sql`select 1`)
    relay.stall()
    // Its first run on this connection: postgres.js describes it first, and flushes.
    const started = performance.now()
    await expect(database.db.execute(sql`select ${2}::int as two`)).rejects.toMatchObject({
      cause: { code: 'CONNECTION_CLOSED' },
    })
    expect(performance.now() - started).toBeGreaterThanOrEqual(DATABASE_TIMEOUT_MS + 1000 - 5)
    await relay.restore()
    expect(rowsOf(await database.db.execute(sql`select ${2}::int as two`))).toEqual([{ two: 2 }])
  })

  it('fails a statement whose answer the silent database holds back', async () => {
    const { database, relay } = relayed
    const started = performance.now()
    const answered = database.db.execute(sql`select pg_sleep(1)`).then(
      () => 'answered',
      (error: { cause?: { code?: string } }) => error.cause?.code,
    )
    // Asked, and the server busy with it, when the relay goes silent.
    await sleep(100)
    relay.stall()
    expect(await answered).toBe('CONNECTION_CLOSED')
    expect(performance.now() - started).toBeGreaterThanOrEqual(DATABASE_TIMEOUT_MS + 1000 - 5)
    await relay.restore()
  })
})

/**
 * What the watch is for: postgres.js's own deadlines and Postgres's, all set short, on a
 * relay that keeps the connection up and passes nothing (a hung host or proxy, whose
 * kernel still acknowledges every packet and keepalive probe). The server's
 * statement_timeout ends the statement, but its error is never heard; none of the
 * client's deadlines applies to a statement in flight. The service's client fails the
 * same statement once its deadline passes (above).
 */
describe.runIf(postgres)("postgres.js's and Postgres's own deadlines on a silent Postgres", () => {
  const STATEMENT_TIMEOUT_MS = 300
  /** Twice what the service's client would wait: the statement timeout and a second more. */
  const WAITED_MS = 2 * (STATEMENT_TIMEOUT_MS + 1000)
  let relayed: RelayedClient

  beforeAll(async () => {
    relayed = await relayedClient({
      // In seconds: TCP keepalive probes after a second of quiet, and connections closed
      // after a second idle or a second connecting.
      keep_alive: 1,
      idle_timeout: 1,
      connect_timeout: 1,
      connection: { statement_timeout: STATEMENT_TIMEOUT_MS },
    })
  })
  afterAll(() => relayed?.close())
  afterEach(() => relayed.relay.restore())

  /** A statement the server ends at its statement_timeout, and how it has settled so far. */
  async function stalledStatement() {
    const { client, relay } = relayed
    await client.unsafe('select 1')
    const statement = client.unsafe('select pg_sleep(1)')
    const outcome = { settled: 'no' }
    const settled = statement.then(
      () => {
        outcome.settled = 'answered'
      },
      (error: { code?: string }) => {
        outcome.settled = String(error.code)
      },
    )
    await sleep(100)
    relay.stall()
    return { statement, outcome, settled }
  }

  it('leave a statement waiting, past all of them, for an answer held back', async () => {
    const { outcome, settled } = await stalledStatement()
    await sleep(WAITED_MS)
    expect(outcome.settled).toBe('no')
    // The connection was up all along: the statement_timeout's error, sent long ago, comes.
    await relayed.relay.restore()
    await settled
    expect(outcome.settled).toBe('57014')
  })

  it("leave it waiting when a timer calls the query's cancel()", async () => {
    const { statement, outcome, settled } = await stalledStatement()
    // The cancel request goes on a connection of its own, which the silent server does
    // not answer either; the statement settles only when the server answers it.
    const cancelled = sleep(STATEMENT_TIMEOUT_MS).then(() => statement.cancel())
    await sleep(WAITED_MS)
    expect(outcome.settled).toBe('no')
    await relayed.relay.restore()
    await Promise.all([settled, cancelled])
    expect(outcome.settled).toBe('57014')
  })
})

describe.runIf(postgres)('the deadline of each statement, over TLS', () => {
  // This Postgres has no TLS: the deadlines are tried on a plain client, through a relay.
  const DEADLINE_MS = 300
  let database: TestDatabase
  let relay: TcpRelay
  let client: ReturnType<typeof postgresClient>
  let relayed: RelayedClient

  beforeAll(async () => {
    relayed = await relayedClient()
    ;({ database, relay, client } = relayed)
    // Connected without a deadline: on a busy machine, connecting took longer than one.
    await client.unsafe('select 1')
  })
  afterAll(() => relayed?.close())

  it('takes the answer that came while this process was held up past the deadline', async () => {
    // Straight to Postgres: the relay runs in this process, and is held up with it.
    const direct = postgresClient(database.url as string, { max: 1, onnotice: () => {} })
    try {
      const sql = withDeadlines(direct, DEADLINE_MS)
      // Connected first: a start-up held up with the process would not have been answered.
      await sql.unsafe('select 1')
      const answered = sql.unsafe('select 1 as one from pg_sleep(0.1)').then((rows) => rows)
      await new Promise((resolve) => setTimeout(resolve, 50))
      await holdTheLoop(DEADLINE_MS + 1200)
      expect(await answered).toEqual([{ one: 1 }])
    } finally {
      await direct.end({ timeout: 0 })
    }
  })

  it('fails a statement that the silent database leaves unanswered', async () => {
    const sql = withDeadlines(client, DEADLINE_MS)
    expect(await sql.unsafe('select 1 as one')).toEqual([{ one: 1 }])
    relay.stall()
    await expect(sql.unsafe('select 1')).rejects.toMatchObject({ code: 'DATABASE_DEADLINE' })
    await expect(sql.unsafe('select 1').values()).rejects.toMatchObject({
      code: 'DATABASE_DEADLINE',
    })
  })

  it('fails a transaction whose BEGIN the silent database leaves unanswered', async () => {
    const sql = withDeadlines(client, DEADLINE_MS)
    await relay.restore()
    expect(await sql.begin((transaction) => transaction.unsafe('select 2 as two'))).toEqual([
      { two: 2 },
    ])
    relay.stall()
    await expect(
      sql.begin((transaction) => transaction.unsafe('select 2 as two')),
    ).rejects.toMatchObject({ code: 'DATABASE_DEADLINE' })
  })
})

/** A database of its own, and a plain postgres.js client that reaches it through a relay. */
async function relayedClient(options: Parameters<typeof postgresClient>[1] = {}) {
  const database = await (postgres as NonNullable<typeof postgres>).open()
  const relay = await tcpRelay(database.url as string)
  const relayed = new URL(database.url as string)
  relayed.port = String(relay.port)
  const client = postgresClient(relayed.href, { max: 1, onnotice: () => {}, ...options })
  return {
    database,
    relay,
    client,
    async close() {
      await client.end({ timeout: 0 })
      await relay.close()
      await database.drop()
    },
  }
}

type RelayedClient = Awaited<ReturnType<typeof relayedClient>>
