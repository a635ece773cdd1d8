import { connect, createServer, type Server, type Socket } from 'node:net'

interface Pair {
  client: Socket
  upstream: Socket | undefined
}

/**
 * A TCP relay to a server (Postgres, Redis) that a test can cut, stall and restore, to
 * stage an outage without touching the server that other suites use.
 * - cut: every connection dropped, new ones refused (a crash, a closed port);
 * - stall: connections accepted and kept, but nothing passes either way (a hung host,
 *   a black-holing network);
 * - restore: back to relaying; what stalled connections held is delivered.
 */
export async function tcpRelay(target: string) {
  const { hostname, port } = new URL(target)
  const pairs = new Set<Pair>()
  let server: Server | undefined
  let relayPort = 0
  let stalled = false

  const link = (pair: Pair) => {
    const upstream = connect(Number(port), hostname)
    pair.upstream = upstream
    upstream.on('error', () => pair.client.destroy())
    upstream.on('close', () => pair.client.destroy())
    pair.client.pipe(upstream).pipe(pair.client)
  }

  const listen = () =>
    new Promise<void>((resolve) => {
      const relay = createServer((client) => {
        const pair: Pair = { client, upstream: undefined }
        pairs.add(pair)
        client.on('error', () => client.destroy())
        client.on('close', () => {
          pairs.delete(pair)
          pair.upstream?.destroy()
        })
        if (stalled) client.pause()
        else link(pair)
      })
      server = relay
      relay.listen(relayPort, '127.0.0.1', () => {
        relayPort = (relay.address() as { port: number }).port
        resolve()
      })
    })

  await listen()
  return {
    url: `${new URL(target).protocol}//127.0.0.1:${relayPort}`,
    port: relayPort,

    async cut() {
      stalled = false
      await new Promise<void>((resolve) => {
        server?.close(() => resolve())
        for (const { client } of pairs) client.destroy()
      })
    },

    stall() {
      stalled = true
      for (const { client, upstream } of pairs) {
        client.unpipe()
        upstream?.unpipe()
        client.pause()
        upstream?.pause()
      }
    },

    async restore() {
      // Relaying already: piping again would deliver everything twice.
      if (server?.listening && !stalled) return
      if (!server?.listening) await listen()
      stalled = false
      for (const pair of pairs) {
        pair.client.resume()
        if (!pair.upstream) link(pair)
        else {
          pair.upstream.resume()
          pair.client.pipe(pair.upstream).pipe(pair.client)
        }
      }
    },

    close() {
      for (const { client, upstream } of pairs) {
        client.destroy()
        upstream?.destroy()
      }
      return new Promise<void>((resolve) =>
        server?.listening ? server.close(() => resolve()) : resolve(),
      )
    },
  }
}

export type TcpRelay = Awaited<ReturnType<typeof tcpRelay>>

/**
 * A TCP relay that holds everything it passes for `delay(ms)` each way, in order: a slow
 * network or an overloaded host, as opposed to the dead one tcpRelay stages.
 */
export async function delayingRelay(target: string) {
  const { hostname, port } = new URL(target)
  let delayMs = 0
  let bytesToRedis = 0
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    const upstream = connect(Number(port), hostname)
    client.on('data', (chunk: Buffer) => {
      bytesToRedis += chunk.length
    })
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('error', () => {
        client.destroy()
        upstream.destroy()
      })
      socket.on('close', () => {
        sockets.delete(socket)
        client.destroy()
        upstream.destroy()
      })
    }
    forwardLate(client, upstream, () => delayMs)
    forwardLate(upstream, client, () => delayMs)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const relayPort = (server.address() as { port: number }).port
  return {
    url: `${new URL(target).protocol}//127.0.0.1:${relayPort}`,
    delay(ms: number) {
      delayMs = ms
    },
    /** The bytes the service has sent towards Redis so far, on every connection. */
    bytesToRedis: () => bytesToRedis,
    close() {
      for (const socket of sockets) socket.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** Writes what `from` reads to `to` once `delay()` has passed, never out of order. */
function forwardLate(from: Socket, to: Socket, delay: () => number) {
  const queue: { due: number; chunk: Buffer }[] = []
  let scheduled = false
  const flush = () => {
    scheduled = false
    const now = performance.now()
    while (queue[0] && queue[0].due <= now) {
      const { chunk } = queue.shift() as { chunk: Buffer }
      if (to.writable) to.write(chunk)
    }
    if (queue[0]) schedule(queue[0].due - now)
  }
  const schedule = (ms: number) => {
    scheduled = true
    setTimeout(flush, ms)
  }
  from.on('data', (chunk: Buffer) => {
    const now = performance.now()
    queue.push({ due: Math.max(now + delay(), queue.at(-1)?.due ?? 0), chunk })
    if (!scheduled) schedule((queue[0]?.due ?? now) - now)
  })
}
