import type { Principal } from '../../platform/infrastructure/access-tokens.js'
import { callerKey } from '../../platform/plugins/rate-limit.js'

/** Close code of a WebSocket beyond its caller's share: RFC 6455's "Try Again Later". */
export const TOO_MANY_SOCKETS = { code: 1013, reason: 'Too many connections' }

/**
 * Told of every /graphql WebSocket: when it opens and closes, and while it belongs to a
 * user (from its upgrade's bearer token or its connection_init's authToken). Called in
 * order for each socket; an observer does its own asynchronous work and failures.
 */
export interface SocketObserver {
  socketOpened?(): void
  socketClosed?(): void
  userJoined?(userId: number): void
  userLeft?(userId: number): void
}

/** The count one open WebSocket holds against its caller. */
export interface SocketSeat {
  /** The caller counted: the address at first, the user once the socket proves one. */
  readonly caller: string
  /** Counts the socket against this caller instead; false when it holds its share. */
  moveTo(principal: Principal | null, ip: string): boolean
  release(): void
}

/**
 * Open WebSockets per caller on this instance (user when authenticated, else address),
 * so one caller cannot hold the server's memory in idle sockets. `max` undefined: no cap.
 */
export function createSocketSeats(
  max: number | undefined,
  observers: readonly SocketObserver[] = [],
) {
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
  const tell = (event: (observer: SocketObserver) => void) => {
    for (const observer of observers) event(observer)
  }
  const joined = (userId: number | undefined) => {
    if (userId !== undefined) tell((observer) => observer.userJoined?.(userId))
  }
  const left = (userId: number | undefined) => {
    if (userId !== undefined) tell((observer) => observer.userLeft?.(userId))
  }

  return {
    /** A seat for a new socket; undefined when its caller holds its share. */
    seat(principal: Principal | null, ip: string): SocketSeat | undefined {
      let holder = callerKey(principal, ip)
      if (!take(holder)) return undefined
      let userId = principal?.userId
      let released = false
      tell((observer) => observer.socketOpened?.())
      joined(userId)
      return {
        get caller() {
          return holder
        },
        moveTo(next, nextIp) {
          const caller = callerKey(next, nextIp)
          if (released || caller === holder) return true
          if (!take(caller)) return false
          give(holder)
          holder = caller
          left(userId)
          userId = next?.userId
          joined(userId)
          return true
        },
        release() {
          if (released) return
          released = true
          give(holder)
          left(userId)
          tell((observer) => observer.socketClosed?.())
        },
      }
    },
  }
}

export type SocketSeats = ReturnType<typeof createSocketSeats>
