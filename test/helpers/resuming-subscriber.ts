import { setTimeout as sleep } from 'node:timers/promises'
import { rawSubscription, type Subprotocol } from './raw-subscription.js'

const MESSAGE_ADDED = `subscription ($chatId: ID, $after: ID) {
  messageAdded(chatId: $chatId, after: $after) { id }
}`

/** How one of a subscriber's sockets ended, and when the next one delivered again. */
export interface Reconnect {
  code: number
  closedAt: number
  resumedAt?: number
}

export interface ResumingSubscriber {
  protocol: Subprotocol
  /** The ids received, over every socket, in the order they came. */
  ids: number[]
  reconnects: Reconnect[]
  /** Sockets that could not be opened (the attempt is made again). */
  failedConnects: number
  /** Errors in results, `error` messages and completions: none is expected. */
  errors: unknown[]
  /** Stops reconnecting, closes the socket, and resolves once it is closed. */
  stop(): Promise<void>
}

/**
 * A client of `messageAdded(chatId)` as an application should write one: whenever its
 * socket closes, for whatever reason, it opens another and resumes after the last id it
 * received (the first time after `after`), so it misses nothing and receives nothing twice.
 */
export function resumingSubscriber(
  baseUrl: string,
  protocol: Subprotocol,
  chatId: string,
  after: number,
): ResumingSubscriber {
  let running = true
  let closeSocket: (() => void) | undefined
  const subscriber: ResumingSubscriber = {
    protocol,
    ids: [],
    reconnects: [],
    failedConnects: 0,
    errors: [],
    stop: async () => {
      running = false
      closeSocket?.()
      await served
    },
  }
  const served = (async () => {
    while (running) {
      const from = subscriber.ids.at(-1) ?? after
      const body = { query: MESSAGE_ADDED, variables: { chatId, after: String(from) } }
      const subscription = await rawSubscription(baseUrl, protocol, body).catch(() => undefined)
      if (!subscription) {
        subscriber.failedConnects += 1
        await sleep(100)
        continue
      }
      const { socket } = subscription
      closeSocket = () => socket.ws.close()
      const reconnect = subscriber.reconnects.at(-1)
      let read = 0
      // After the socket's own listener, which has parsed the frame into `frames`.
      const take = () => {
        for (; read < socket.frames.length; read += 1) {
          const frame = socket.frames[read] ?? {}
          if (frame.id !== '1') continue
          const id = frame.payload?.data?.messageAdded?.id
          if (id === undefined) subscriber.errors.push(frame)
          else {
            if (reconnect && reconnect.resumedAt === undefined)
              reconnect.resumedAt = performance.now()
            subscriber.ids.push(Number(id))
          }
        }
      }
      socket.ws.on('message', take)
      take()
      if (!running) socket.ws.close()
      const { code } = await socket.closed
      take()
      if (running) subscriber.reconnects.push({ code, closedAt: performance.now() })
    }
  })()
  return subscriber
}
