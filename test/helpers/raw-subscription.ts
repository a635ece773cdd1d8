import { wsUrl } from './graphql.js'
import { type Frame, LEGACY_WS, openRawSocket, type RawSocket, TRANSPORT_WS } from './raw-socket.js'

export { LEGACY_WS, TRANSPORT_WS }

/** The words of each subprotocol for what a subscription sends and receives. */
const WORDS = {
  [TRANSPORT_WS]: { subscribe: 'subscribe', next: 'next' },
  [LEGACY_WS]: { subscribe: 'start', next: 'data' },
}

export type Subprotocol = keyof typeof WORDS

export interface RawSubscription<Data> {
  socket: RawSocket
  /** The data of each result received so far, in order. */
  items: Data[]
  /** The errors of results received so far (a refused subscription's come in one result). */
  errors: { message: string; extensions?: Record<string, any> }[]
  /** Whether the server completed the subscription. */
  completed(): boolean
  /** Resolves once `count` items have arrived; rejects when the socket closes first, or at `timeoutMs`. */
  until(count: number, timeoutMs?: number): Promise<Data[]>
  /** Resolves once the subscription completed or failed: its errors. */
  settled(timeoutMs?: number): Promise<RawSubscription<Data>['errors']>
  /** Kills the connection as a network loss does: no close frame, no goodbye. */
  kill(): void
}

/**
 * One subscription on a socket of its own, in either subprotocol, written at the wire so
 * that a test can kill its connection as a lost network would.
 */
export async function rawSubscription<Data = any>(
  baseUrl: string,
  protocol: Subprotocol,
  body: { query: string; variables?: Record<string, unknown> },
  token?: string,
): Promise<RawSubscription<Data>> {
  const socket = await openRawSocket(wsUrl(baseUrl), protocol)
  socket.send({ type: 'connection_init', payload: token ? { authToken: token } : {} })
  const ack = await socket.next()
  if (ack.type !== 'connection_ack') throw new Error(`no connection_ack: ${JSON.stringify(ack)}`)
  socket.send({ id: '1', type: WORDS[protocol].subscribe, payload: body })
  const ofOurs = (frame: Frame) => frame.id === '1'
  const results = () =>
    socket.frames.filter((frame) => ofOurs(frame) && frame.type === WORDS[protocol].next)
  const failures = () => socket.frames.filter((frame) => ofOurs(frame) && frame.type === 'error')
  const subscription: RawSubscription<Data> = {
    socket,
    get items() {
      return results().flatMap((frame) => (frame.payload.data ? [frame.payload.data as Data] : []))
    },
    get errors() {
      return [
        ...results().flatMap((frame) => frame.payload.errors ?? []),
        ...failures().flatMap((frame) => frame.payload),
      ]
    },
    completed: () => socket.frames.some((frame) => ofOurs(frame) && frame.type === 'complete'),
    until: (count, timeoutMs = 20_000) =>
      waitFor(socket, () => subscription.items.length >= count, timeoutMs).then(
        () => subscription.items,
      ),
    settled: (timeoutMs = 10_000) =>
      waitFor(socket, () => subscription.completed() || failures().length > 0, timeoutMs).then(
        () => subscription.errors,
      ),
    kill: () => socket.ws.terminate(),
  }
  return subscription
}

/** Waits for `done` to hold as frames arrive. */
function waitFor(socket: RawSocket, done: () => boolean, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanUp()
      reject(new Error(`not there within ${timeoutMs} ms; got ${JSON.stringify(socket.frames)}`))
    }, timeoutMs)
    const check = () => {
      if (done()) {
        cleanUp()
        resolve()
      }
    }
    const closed = () => {
      if (done()) return check()
      cleanUp()
      reject(new Error(`closed first; got ${JSON.stringify(socket.frames)}`))
    }
    const cleanUp = () => {
      clearTimeout(timer)
      socket.ws.off('message', onMessage)
      socket.ws.off('close', closed)
    }
    // After the socket's own handler has parsed the frame into `frames`.
    const onMessage = () => setImmediate(check)
    socket.ws.on('message', onMessage)
    socket.ws.on('close', closed)
    check()
  })
}
