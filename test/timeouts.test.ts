import { once } from 'node:events'
import { connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { collect, graphql, subscriptionsActive, wsClient } from './helpers/graphql.js'
import { startServer, type TestServer } from './helpers/server.js'

const CONNECTION_TIMEOUT = 300
const REQUEST_TIMEOUT = 600
const KEEP_ALIVE_TIMEOUT = 400
// Node adds a second to the keep-alive timeout, so the client closes first.
const KEEP_ALIVE_BUFFER = 1000
// The upper bounds leave room for a machine busy with other suites.
const SLACK = 4000

// Sockets, not storage: one backend is enough.
describe.each(backends.slice(0, 1))('slow clients ($name)', (backend) => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer(backend, {
      CONNECTION_TIMEOUT: String(CONNECTION_TIMEOUT),
      REQUEST_TIMEOUT: String(REQUEST_TIMEOUT),
      KEEP_ALIVE_TIMEOUT: String(KEEP_ALIVE_TIMEOUT),
    })
  })
  afterAll(() => server?.close())

  /** A bare TCP connection: `closed` tells when the server hung up and what it had sent. */
  function rawSocket() {
    const socket = connect(Number(new URL(server.baseUrl).port), '127.0.0.1')
    const opened = Date.now()
    let received = ''
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      received += chunk
    })
    // The socket's error (a reset, say) is recorded, not thrown: each test says which it allows.
    let errorCode: string | undefined
    socket.on('error', (error: NodeJS.ErrnoException) => {
      errorCode = error.code
    })
    const closed = once(socket, 'close').then(() => ({
      afterMs: Date.now() - opened,
      received,
      errorCode,
    }))
    return { socket, closed }
  }

  it('hangs up on a client silent halfway through its headers after CONNECTION_TIMEOUT', async () => {
    const { socket, closed } = rawSocket()
    socket.write('GET /products HTTP/1.1\r\nHost: 127.0.0.1\r\n')
    const { afterMs, received, errorCode } = await closed
    expect(received).toBe('')
    expect(errorCode).toBeUndefined()
    expect(afterMs).toBeGreaterThanOrEqual(CONNECTION_TIMEOUT - 50)
    expect(afterMs).toBeLessThan(CONNECTION_TIMEOUT + SLACK)
  }, 10_000)

  it('answers 408 to a client still trickling its headers at REQUEST_TIMEOUT', async () => {
    const { socket, closed } = rawSocket()
    socket.write('GET /products HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ')
    // A byte every 100 ms: never silent for CONNECTION_TIMEOUT, never done either.
    const trickle = setInterval(() => socket.writable && socket.write('z'), 100)
    socket.once('data', () => clearInterval(trickle))
    const { afterMs, received, errorCode } = await closed.finally(() => clearInterval(trickle))
    expect(received).toMatch(/^HTTP\/1\.1 408 /)
    // A byte sent between the server's hang-up and the 408 being read here draws a reset from
    // the server's kernel; on a busy machine that window is real, and the answer still came.
    expect([undefined, 'ECONNRESET']).toContain(errorCode)
    expect(afterMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT - 50)
    expect(afterMs).toBeLessThan(REQUEST_TIMEOUT + SLACK)
  }, 10_000)

  it('keeps an idle connection for the next request until KEEP_ALIVE_TIMEOUT', async () => {
    const { socket, closed } = rawSocket()
    socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    const { afterMs, received, errorCode } = await closed
    expect(received).toMatch(/^HTTP\/1\.1 200 .*keep-alive/s)
    expect(errorCode).toBeUndefined()
    // Idle for longer than CONNECTION_TIMEOUT: between requests, only this one counts.
    expect(afterMs).toBeGreaterThanOrEqual(KEEP_ALIVE_TIMEOUT + KEEP_ALIVE_BUFFER - 50)
    expect(afterMs).toBeLessThan(KEEP_ALIVE_TIMEOUT + KEEP_ALIVE_BUFFER + SLACK)
  }, 10_000)

  it('leaves a silent graphql-transport-ws socket open past every timeout', async () => {
    const client = wsClient(server.baseUrl)
    const watcher = collect(client, 'subscription { messageAdded(chatId: "idle") { text } }')
    try {
      await subscriptionsActive(server.events, 1)
      // Silent well past both timeouts (the server's own pings come every 12 s).
      await sleep(3 * REQUEST_TIMEOUT)
      await graphql(
        server.baseUrl,
        'mutation { sendMessage(text: "still here", author: "idle", chatId: "idle") { id } }',
      )
      expect(await watcher.until(1)).toEqual([{ messageAdded: { text: 'still here' } }])
      expect(watcher.errors).toEqual([])
    } finally {
      watcher.dispose()
      await client.dispose()
    }
  }, 15_000)
})
