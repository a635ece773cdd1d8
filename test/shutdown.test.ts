import { once } from 'node:events'
import http from 'node:http'
import { afterAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { wsUrl } from './helpers/graphql.js'
import { LEGACY_WS, TRANSPORT_WS } from './helpers/raw-socket.js'
import { startedProcess, stopProcesses } from './helpers/server-process.js'

const ADMIN = { email: 'shutdown@example.com', password: 'shutdown-password-1' }
const environment = {
  NODE_ENV: 'production',
  LOG_FORMAT: 'json',
  JWT_SECRET: 'a-shutdown-secret-that-is-long-enough-for-hs256',
  ADMIN_EMAIL: ADMIN.email,
  ADMIN_PASSWORD: ADMIN.password,
  RATE_LIMIT_MAX: '0',
}

afterAll(stopProcesses)

/** A login over one of the agent's kept-alive connections: the status and Connection header. */
function login(baseUrl: string, agent: http.Agent) {
  return new Promise<{ status?: number; connection?: string; error?: string }>((resolve) => {
    const request = http.request(
      `${baseUrl}/auth/login`,
      { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
      (response) => {
        response.resume()
        response.on('end', () =>
          resolve({ status: response.statusCode, connection: response.headers.connection }),
        )
      },
    )
    request.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code }))
    request.end(JSON.stringify(ADMIN))
  })
}

describe('SIGTERM', () => {
  it('finishes what is in flight with Connection: close, closes sockets with 1001, and exits 0 promptly', async () => {
    const server = await startedProcess(environment)
    // A socket of each subprotocol, acknowledged.
    const sockets = [TRANSPORT_WS, LEGACY_WS].map(
      (protocol) => new WebSocket(wsUrl(server.baseUrl), [protocol]),
    )
    const socketsClosed = sockets.map((socket) => once(socket, 'close'))
    await Promise.all(
      sockets.map(async (socket) => {
        await once(socket, 'open')
        socket.send(JSON.stringify({ type: 'connection_init' }))
        await once(socket, 'message')
      }),
    )

    // Eight connections, opened and kept alive: what follows travels on them, in flight.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 })
    const warm = await Promise.all(Array.from({ length: 8 }, () => login(server.baseUrl, agent)))
    expect(warm.map((each) => each.connection)).toEqual(Array(8).fill('keep-alive'))
    // Each login hashes a password for tens of milliseconds: eight are still running when
    // the signal arrives (one that finished before it would say keep-alive, and fail).
    const inFlight = Array.from({ length: 8 }, () => login(server.baseUrl, agent))
    await new Promise((resolve) => setTimeout(resolve, 20))
    const signalledAt = performance.now()
    server.child.kill('SIGTERM')

    const [exitCode] = await once(server.child, 'exit')
    const exitedMs = performance.now() - signalledAt
    expect(await Promise.all(inFlight)).toEqual(Array(8).fill({ status: 200, connection: 'close' }))
    const closeCodes = (await Promise.all(socketsClosed)).map(([code]) => code)
    expect(closeCodes).toEqual([1001, 1001])
    expect(exitCode).toBe(0)
    // close-with-grace kills the process after 10 s, skipping the cleanup: far from it.
    expect(exitedMs).toBeLessThan(5000)
    const records = server.lines().map((line) => JSON.parse(line))
    expect(records).toContainEqual(expect.objectContaining({ msg: 'shut down' }))
    expect(server.output.stderr).not.toMatch(/killed by timeout/)
    agent.destroy()
  })

  it('with SHUTDOWN_DRAIN_MS, fails /ready at once and serves all else as before until the drain ends', async () => {
    // Long enough for the checks below to run inside the drain on a loaded machine.
    const server = await startedProcess({ ...environment, SHUTDOWN_DRAIN_MS: '4000' })
    const socket = new WebSocket(wsUrl(server.baseUrl), [TRANSPORT_WS])
    const socketClosed = once(socket, 'close')
    await once(socket, 'open')
    socket.send(JSON.stringify({ type: 'connection_init' }))
    await once(socket, 'message')
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    expect(await login(server.baseUrl, agent)).toEqual({ status: 200, connection: 'keep-alive' })
    expect((await fetch(`${server.baseUrl}/ready`)).status).toBe(200)

    server.child.kill('SIGTERM')
    await expect.poll(async () => (await fetch(`${server.baseUrl}/ready`)).status).toBe(503)
    const ready = await fetch(`${server.baseUrl}/ready`)
    expect(await ready.json()).toEqual({
      error: { code: 'UNAVAILABLE', message: 'Not ready: shutting down' },
    })
    // Still draining: the kept-alive connection is served and kept, the socket open.
    expect(await login(server.baseUrl, agent)).toEqual({ status: 200, connection: 'keep-alive' })
    expect((await fetch(`${server.baseUrl}/health`)).status).toBe(200)
    expect(socket.readyState).toBe(WebSocket.OPEN)

    const [exitCode] = await once(server.child, 'exit')
    expect(exitCode).toBe(0)
    expect((await socketClosed)[0]).toBe(1001)
    const records = server.lines().map((line) => JSON.parse(line))
    expect(records).toContainEqual(
      expect.objectContaining({
        msg: expect.stringMatching(/^shutting down: draining/),
        drainMs: 4000,
      }),
    )
    expect(records).toContainEqual(expect.objectContaining({ msg: 'shut down' }))
    agent.destroy()
  })
})
