import type { FastifyRequest } from 'fastify'
import { setNewest } from '../newest-entries.js'

/**
 * Callers remembered at most: past it the oldest goes first, whose reads may then be
 * answered by the replica before their window ends (a flood of writers from that many
 * addresses within REPLICA_MAX_LAG_MS).
 */
const CAPACITY = 100_000

/**
 * Who wrote through this instance in the last `windowMs` (REPLICA_MAX_LAG_MS), and when:
 * their reads must see those writes, which the replica may not hold yet. A caller is a
 * `callerKey`: the account its token proves, else its address.
 */
export function createRecentWrites({
  windowMs,
  callerOf,
  now = Date.now,
}: {
  windowMs: number
  /** The caller a request comes from (see rate-limit.ts's requestCaller). */
  callerOf: (request: FastifyRequest) => string
  now?: () => number
}) {
  /** In the order of their last writes: the oldest first. */
  const lastWrites = new Map<string, number>()

  function forgetExpired(at: number) {
    for (const [caller, wroteAt] of lastWrites) {
      if (at - wroteAt < windowMs) return
      lastWrites.delete(caller)
    }
  }

  const record = (caller: string) => {
    const at = now()
    forgetExpired(at)
    setNewest(lastWrites, caller, at, CAPACITY)
  }

  return {
    /** After a write of `caller` has committed (a WebSocket's mutation). */
    record,
    /** After the write `request` made has committed. */
    recordRequest: (request: FastifyRequest) => record(callerOf(request)),
    /** When the request's caller last wrote, if within the window. */
    lastWriteBy(request: FastifyRequest): number | undefined {
      const wroteAt = lastWrites.get(callerOf(request))
      return wroteAt !== undefined && now() - wroteAt < windowMs ? wroteAt : undefined
    },
  }
}

export type RecentWrites = ReturnType<typeof createRecentWrites>
