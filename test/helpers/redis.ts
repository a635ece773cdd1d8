import { connect, createServer, type Server, type Socket } from 'node:net'

/** Real Redis for the multi-instance suites: set in CI, where those suites are mandatory. */
export const redisUrl = process.env.TEST_REDIS_URL
if (process.env.CI === 'true' && !redisUrl) {
  throw new Error('CI runs the Redis suites: set TEST_REDIS_URL')
}

/**
 * A TCP relay to Redis that a test can cut and restore, so an outage can be staged
 * without touching the Redis that other suites use.
 */
export async function redisRelay(target: string) {
  const { hostname, port } = new URL(target)
  const sockets = new Set<Socket>()
  let server: Server | undefined
  let relayPort = 0

  const listen = () =>
    new Promise<void>((resolve) => {
      const relay = createServer((client) => {
        const upstream = connect(Number(port), hostname)
        for (const socket of [client, upstream]) {
          sockets.add(socket)
          socket.on('close', () => sockets.delete(socket))
          socket.on('error', () => socket.destroy())
        }
        client.pipe(upstream).pipe(client)
      })
      server = relay
      relay.listen(relayPort, '127.0.0.1', () => {
        relayPort = (relay.address() as { port: number }).port
        resolve()
      })
    })

  await listen()
  return {
    url: `redis://127.0.0.1:${relayPort}`,
    /** Drops every connection and refuses new ones. */
    async cut() {
      await new Promise<void>((resolve) => {
        server?.close(() => resolve())
        for (const socket of sockets) socket.destroy()
      })
    },
    restore: listen,
    close() {
      for (const socket of sockets) socket.destroy()
      return new Promise<void>((resolve) =>
        server?.listening ? server.close(() => resolve()) : resolve(),
      )
    },
  }
}
