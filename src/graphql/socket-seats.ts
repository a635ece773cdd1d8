/** Close code of a WebSocket beyond its caller's share: RFC 6455's "Try Again Later". */
export const TOO_MANY_SOCKETS = { code: 1013, reason: 'Too many connections' }

/** The count one open WebSocket holds against its caller. */
export interface SocketSeat {
  /** The caller counted: the address at first, the user once the socket proves one. */
  readonly caller: string
  /** Counts the socket against `caller` instead; false when that caller holds its share. */
  moveTo(caller: string): boolean
  release(): void
}

/**
 * Open WebSockets per caller on this instance (user when authenticated, else address),
 * so one caller cannot hold the server's memory in idle sockets. `max` undefined: no cap.
 */
export function createSocketSeats(max: number | undefined) {
  const held = new Map<string, number>()
  const take = (caller: string) => {
    const count = held.get(caller) ?? 0
    if (max !== undefined && count >= max) return false
    held.set(caller, count + 1)
    return true
  }
  const give = (caller: string) => {
    const count = (held.get(caller) ?? 1) - 1
    if (count > 0) held.set(caller, count)
    else held.delete(caller)
  }

  return {
    /** A seat for a new socket of `caller`; undefined when the caller holds its share. */
    seat(caller: string): SocketSeat | undefined {
      if (!take(caller)) return undefined
      let holder = caller
      let released = false
      return {
        get caller() {
          return holder
        },
        moveTo(next) {
          if (released || next === holder) return true
          if (!take(next)) return false
          give(holder)
          holder = next
          return true
        },
        release() {
          if (!released) give(holder)
          released = true
        },
      }
    },
  }
}

export type SocketSeats = ReturnType<typeof createSocketSeats>
