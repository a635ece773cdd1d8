import { LIMITS } from './limits.js'

export const RESPONSE_TOO_LARGE = 'RESPONSE_TOO_LARGE'

/** The byte size of a serialized response over LIMITS.responseBytes; undefined within it. */
export function bytesOverCap(serialized: string): number | undefined {
  // A UTF-16 unit is at most 3 bytes of UTF-8: most responses need no counting at all.
  if (serialized.length * 3 <= LIMITS.responseBytes) return undefined
  const bytes = Buffer.byteLength(serialized)
  return bytes > LIMITS.responseBytes ? bytes : undefined
}

/** What the client gets instead of a result of `bytes` bytes. */
export const tooLargeResult = (bytes: number) => ({
  data: null,
  errors: [
    {
      message:
        `The response is ${bytes} bytes; the limit is ${LIMITS.responseBytes}: ` +
        'ask for fewer items or fewer fields',
      extensions: { code: RESPONSE_TOO_LARGE },
    },
  ],
})

/**
 * The head of a result frame as the WebSocket server writes it: graphql-ws's
 * `{"id":…,"type":"next",`, and the legacy protocol's `data` in the same order
 * (websocket/legacy-protocol.ts). The response-cap tests fail if that order changes.
 */
const RESULT_HEAD = /^\{"id":("(?:[^"\\]|\\.)*"),"type":"(next|data)"/

/**
 * A WebSocket frame as it is, or, when it is over the cap, its operation's result
 * message with the error instead. Each frame is serialized once by graphql-ws and
 * measured here; only an oversized one is taken apart, by its head, to answer its id.
 */
export function cappedFrame(frame: string): string {
  const bytes = bytesOverCap(frame)
  if (bytes === undefined) return frame
  const head = RESULT_HEAD.exec(frame)
  // Only results carry data; anything else this large is the protocol's own, and sent.
  if (!head) return frame
  const [, id, type] = head
  return JSON.stringify({ id: JSON.parse(id as string), type, payload: tooLargeResult(bytes) })
}
