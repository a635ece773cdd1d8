import type { ClientOptions } from 'ws'
import WebSocket from 'ws'

/** GraphQL over WebSocket at the wire: raw frames in, frames and close codes out. */

export const TRANSPORT_WS = 'graphql-transport-ws'
export const LEGACY_WS = 'graphql-ws'

export type Frame = Record<string, any>

export interface Closed {
  code: number
  reason: string
}

export interface RawSocket {
  ws: WebSocket
  /** Every frame received so far, parsed when it is JSON. */
  frames: Frame[]
  /** The close code and reason the client observed. */
  closed: Promise<Closed>
  send(frame: unknown): void
  sendRaw(data: string): void
  /** The next frame not read yet; rejects if the socket closes first or none comes in time. */
  next(timeoutMs?: number): Promise<Frame>
}

/** Opens a socket with the given subprotocol (none when undefined) and collects frames. */
export function openRawSocket(
  url: string,
  protocol: string | undefined,
  options: ClientOptions = {},
): Promise<RawSocket> {
  const ws = new WebSocket(url, protocol === undefined ? [] : [protocol], options)
  const frames: Frame[] = []
  let read = 0
  let closedWith: Closed | undefined
  let wake: (() => void) | undefined
  const closed = new Promise<Closed>((resolve) => {
    ws.on('close', (code, reason) => {
      closedWith = { code, reason: String(reason) }
      resolve(closedWith)
      wake?.()
    })
  })
  ws.on('message', (data) => {
    const text = String(data)
    try {
      frames.push(JSON.parse(text))
    } catch {
      frames.push({ unparsable: text })
    }
    wake?.()
  })
  const socket: RawSocket = {
    ws,
    frames,
    closed,
    send: (frame) => ws.send(JSON.stringify(frame)),
    sendRaw: (data) => ws.send(data),
    next(timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          wake = undefined
          reject(new Error(`no frame within ${timeoutMs} ms; got ${JSON.stringify(frames)}`))
        }, timeoutMs)
        const check = () => {
          const frame = frames[read]
          if (frame) {
            read += 1
            clearTimeout(timer)
            wake = undefined
            resolve(frame)
          } else if (closedWith) {
            clearTimeout(timer)
            wake = undefined
            reject(
              new Error(
                `closed with ${closedWith.code} ${closedWith.reason}; got ${JSON.stringify(frames)}`,
              ),
            )
          }
        }
        wake = check
        check()
      })
    },
  }
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(socket))
    ws.once('error', reject)
  })
}
