import { CloseCode } from 'graphql-ws'
import { isRecord } from '../../platform/input-rules.js'

/**
 * The legacy subprotocol of subscriptions-transport-ws, still spoken by older clients:
 * https://github.com/apollographql/subscriptions-transport-ws/blob/master/PROTOCOL.md
 */
export const LEGACY_SUBPROTOCOL = 'graphql-ws'

/** The client's messages that graphql-transport-ws names otherwise. */
const FROM_LEGACY: Readonly<Record<string, string>> = { start: 'subscribe', stop: 'complete' }

/** What a legacy socket's translation needs of the socket: a send that skips a closed one. */
export interface LegacyWire {
  send(frame: string): void
  close(code: number, reason: string): void
}

/**
 * A legacy socket as graphql-ws's server sees it: a graphql-transport-ws socket. Both
 * protocols carry the same operations in the same shapes and differ in a few message
 * names, so one server serves both, and the translation is done where graphql-ws reads
 * and writes JSON (its documented reviver and replacer), on the one parse and the one
 * serialization each message has anyway.
 *
 * The `key === ''` tests find the message itself: the parser calls the reviver for the
 * root last and the serializer calls the replacer for it first, with the empty key. A
 * property of that name deeper down is neither a GraphQL name nor valid input to this
 * schema (it has no JSON scalar), so it is never taken for a message.
 */
export function legacyTranslation(wire: LegacyWire) {
  let terminated = false
  return {
    /** A legacy message in graphql-transport-ws's terms. */
    reviver(key: string, value: unknown): unknown {
      if (key !== '' || !isRecord(value) || typeof value.type !== 'string') return value
      // graphql-ws refuses the message it does not know, and closes: see `close`.
      if (value.type === 'connection_terminate') terminated = true
      const message: Record<string, unknown> = {
        ...value,
        type: FROM_LEGACY[value.type] ?? value.type,
      }
      // subscriptions-transport-ws's own clients send string ids; some send numbers.
      if (typeof value.id === 'number') message.id = String(value.id)
      return message
    },

    /** A graphql-transport-ws message in legacy terms: a result is `data`. */
    replacer(key: string, value: unknown): unknown {
      if (key !== '' || !isRecord(value) || value.type !== 'next') return value
      return { id: value.id, type: 'data', payload: value.payload }
    },

    /**
     * graphql-ws's closes in legacy terms: a refused connection (credentials, or an
     * operation before connection_init) is told with connection_error first, and a
     * client's connection_terminate is answered with a normal closure.
     */
    close(code: number, reason: string) {
      if (terminated) return wire.close(1000, 'Normal closure')
      const refused = code === CloseCode.Forbidden || code === CloseCode.Unauthorized
      if (refused)
        wire.send(JSON.stringify({ type: 'connection_error', payload: { message: reason } }))
      wire.close(code, reason)
    },
  }
}
