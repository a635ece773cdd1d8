import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { type AddressInfo, connect, createServer } from 'node:net'
import { tcpRelay } from './tcp-relay.js'

/** Real Redis for the multi-instance suites: set in CI, where those suites are mandatory. */
export const redisUrl = process.env.TEST_REDIS_URL
if (process.env.CI === 'true' && !redisUrl) {
  throw new Error('CI runs the Redis suites: set TEST_REDIS_URL')
}

/** A relay to Redis that a test can cut, stall and restore (see tcpRelay). */
export const redisRelay = tcpRelay

/**
 * A redis-server of the test's own, on a port of its own, that the test can kill outright
 * (SIGKILL: no goodbye to its clients) and start again on the same port, empty, as a
 * crashed and restarted Redis comes back.
 */
export async function ownRedis() {
  const port = await freePort()
  let server: ChildProcess | undefined
  const start = async () => {
    server = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    )
    await until(() => answers(port))
  }
  await start()
  return {
    url: `redis://127.0.0.1:${port}`,
    async kill() {
      const exited = once(server as ChildProcess, 'exit')
      server?.kill('SIGKILL')
      await exited
    },
    start,
    async stop() {
      if (server && server.exitCode === null && server.signalCode === null) {
        const exited = once(server, 'exit')
        server.kill('SIGTERM')
        await exited
      }
    },
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo
      probe.close(() => resolve(port))
    })
  })
}

/** Whether a Redis answers PING on the port. */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write('PING\r\n'))
    socket.once('data', (data) => {
      socket.destroy()
      resolve(String(data).startsWith('+PONG'))
    })
    socket.once('error', () => resolve(false))
  })
}

async function until(ready: () => Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error('redis-server did not start')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
