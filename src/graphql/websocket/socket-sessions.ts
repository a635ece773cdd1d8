import type { WebSocket } from 'ws'
import type { TokenPrincipal } from '../../platform/infrastructure/access-tokens.js'

/** Close code of a WebSocket whose credentials are refused, as graphql-transport-ws has it. */
export const FORBIDDEN_CLOSE = { code: 4403, reason: 'Forbidden' }

/** setTimeout's longest delay; a token living longer is looked at again then. */
const LONGEST_TIMER_MS = 2 ** 31 - 1

interface TrackedSocket {
  socket: WebSocket
  sessionVersion: number
}

/**
 * The sockets of each signed-in user on this instance, with the session their token
 * belongs to: a socket ends (4403) when its token expires, and when its account's
 * sessions end (an announcement, live-accounts.ts), so a logged-out, demoted or deleted
 * account receives nothing more. The client reconnects with a fresh token.
 */
export function createSocketSessions() {
  const byUser = new Map<number, Set<TrackedSocket>>()
  const forbid = (socket: WebSocket) => socket.close(FORBIDDEN_CLOSE.code, FORBIDDEN_CLOSE.reason)

  function untrack(userId: number, tracked: TrackedSocket) {
    const sockets = byUser.get(userId)
    sockets?.delete(tracked)
    if (sockets?.size === 0) byUser.delete(userId)
  }

  function closeAtExpiry(socket: WebSocket, expiresAt: number): NodeJS.Timeout {
    const wait = Math.min(Math.max(expiresAt - Date.now(), 0), LONGEST_TIMER_MS)
    const timer = setTimeout(() => {
      if (Date.now() >= expiresAt) forbid(socket)
      else closeAtExpiry(socket, expiresAt)
    }, wait)
    timer.unref()
    return timer
  }

  return {
    /** The socket belongs to this principal's session until it closes. */
    track(socket: WebSocket, principal: TokenPrincipal): void {
      const tracked = { socket, sessionVersion: principal.sessionVersion }
      let sockets = byUser.get(principal.userId)
      if (!sockets) {
        sockets = new Set()
        byUser.set(principal.userId, sockets)
      }
      sockets.add(tracked)
      const expiry = closeAtExpiry(socket, principal.expiresAt)
      socket.once('close', () => {
        clearTimeout(expiry)
        untrack(principal.userId, tracked)
      })
    },

    /** Closes the account's sockets of sessions older than `sessionVersion`. */
    sessionsEnded(userId: number, sessionVersion: number): void {
      for (const tracked of byUser.get(userId) ?? []) {
        if (tracked.sessionVersion < sessionVersion) forbid(tracked.socket)
      }
    },
  }
}

export type SocketSessions = ReturnType<typeof createSocketSessions>
