import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { chatTopics } from '../src/domains/chat/chat-topics.js'
import { backends } from './helpers/backends.js'
import { collect, subscriptionsActive, wsClient, wsUrl } from './helpers/graphql.js'
import { LEGACY_WS, TRANSPORT_WS } from './helpers/raw-socket.js'
import { startServer, type TestServer } from './helpers/server.js'

const EVENTS = 20_000

const heapAfterCollection = () => {
  globalThis.gc?.()
  return process.memoryUsage().heapUsed
}

const PROTOCOLS = [
  { protocol: TRANSPORT_WS, subscribe: 'subscribe' },
  { protocol: LEGACY_WS, subscribe: 'start' },
]

/** A subscriber that subscribes, then stops reading its socket. */
async function pausedSubscriber(baseUrl: string, { protocol, subscribe }: (typeof PROTOCOLS)[0]) {
  const socket = new WebSocket(wsUrl(baseUrl), protocol)
  const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)))
  socket.on('error', () => {})
  await new Promise((resolve) => socket.once('open', resolve))
  socket.send(JSON.stringify({ type: 'connection_init' }))
  await new Promise((resolve) => socket.once('message', resolve))
  socket.send(
    JSON.stringify({
      id: '1',
      type: subscribe,
      payload: { query: 'subscription { messageAdded { id text } }' },
    }),
  )
  return {
    pause: () => (socket as unknown as { _socket: { pause(): void } })._socket.pause(),
    resume: () => (socket as unknown as { _socket: { resume(): void } })._socket.resume(),
    closed,
  }
}

describe.each(backends.slice(0, 1))('a subscriber that stops reading ($name)', (backend) => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer(backend)
  })
  afterAll(() => server?.close())

  it.each(PROTOCOLS)(
    'over $protocol: is cut off, without growing memory or delaying the others',
    async (protocol) => {
      const slow = await pausedSubscriber(server.baseUrl, protocol)
      const client = wsClient(server.baseUrl)
      const healthy = collect(client, 'subscription { messageAdded { id } }')
      await subscriptionsActive(server.events, 2)
      slow.pause()
      const heapBefore = heapAfterCollection()

      for (let index = 0; index < EVENTS; index += 1) {
        // A fresh 2 KB string per event, as each real message is: held, they would add up.
        const text = String(index).padEnd(2000, 'x')
        const messageAdded = {
          id: index,
          chatId: 'flood',
          text,
          author: 'bot',
          createdAt: new Date().toISOString(),
        }
        await server.events.publish(chatTopics.messageAdded('flood'), { messageAdded })
        // Let sockets drain between bursts, as a real stream of mutations would.
        if (index % 50 === 0) await new Promise((resolve) => setImmediate(resolve))
      }
      await healthy.until(EVENTS, 60_000)
      const growth = heapAfterCollection() - heapBefore

      // The slow subscriber was cut off: its subscription is gone and its socket closed.
      expect(server.events.activeSubscriptions()).toBe(1)
      slow.resume()
      expect([1008, 1006]).toContain(await slow.closed)
      // 20,000 events of 2 KB held for it would be 40 MB; the queue bound keeps it far below.
      expect(growth).toBeLessThan(8 * 1024 * 1024)
      expect(healthy.items.map((item) => item.messageAdded.id)).toEqual(
        Array.from({ length: EVENTS }, (_, index) => String(index)),
      )
      healthy.dispose()
      await client.dispose()
    },
    120_000,
  )
})
