import type { Database } from './database.js'

/**
 * What one probe of the replica found: the replay lag in milliseconds (null when it
 * cannot be told: nothing replayed since the replica started, with WAL pending), and
 * whether the server is a standby at all (a promoted one no longer follows the primary).
 */
export interface ProbeAnswer {
  lagMs: number | null
  standby: boolean
}

/** Why the replica is out of use, or undefined while it serves. */
type OutOfUse = string | undefined

export interface ReadReplica {
  /** Drizzle over the replica's own pool. */
  readonly db: Database
  /** REPLICA_MAX_LAG_MS: the replica serves while it lags less, and a writer skips it this long. */
  readonly maxLagMs: number
  /** The lag the last probe measured, in ms; Infinity while the replica is out of reach. */
  lagMs(): number
  /** Whether reads may go to the replica now (see `replayedThrough`). */
  inUse(): boolean
  /**
   * `onReplica` when the replica is in use and `newestWrite` (the instant, in ms since
   * the epoch, of the newest write the read must see) is older than `maxLagMs`;
   * `onPrimary` otherwise, and when the replica fails the read, which then puts it out
   * of use until a probe finds it answering again.
   */
  read<T>(
    newestWrite: number | undefined,
    onReplica: () => Promise<T>,
    onPrimary: () => Promise<T>,
  ): Promise<T>
  /** Reads answered by each since the start, for the metrics. */
  readonly served: { readonly replica: number; readonly primary: number }
  /** Told of the verdict so far, then each time the replica goes out of use (with why) or into use. */
  onChange(listener: (outOfUse: OutOfUse) => void): void
  close(): Promise<void>
}

export interface ReplicaSettings {
  db: Database
  maxLagMs: number
  /** One round trip to the replica: its lag, and whether it is a standby. */
  probe(): Promise<ProbeAnswer>
  /** Closes the replica's connections. */
  closeConnections(): Promise<void>
  now?: () => number
}

/** A probe this often, and at least four times per REPLICA_MAX_LAG_MS. */
const PROBE_EVERY_MS = 250

/**
 * The replica, probed every PROBE_EVERY_MS from the moment it is opened. Reads go to it
 * only while everything committed on the primary more than `maxLagMs` ago is known to
 * be on it: `replayedThrough` (the instant a probe was sent, less the lag it measured)
 * is less than `maxLagMs` old. So a lag just under the maximum, measured a probe ago,
 * already counts as too much, and a probe that does not come back puts the replica out
 * of use within `maxLagMs`, before the probe's own deadline. It follows that a write
 * older than `maxLagMs` is on the replica whenever the replica serves: that is what
 * makes read-your-writes a window of `maxLagMs` after each write.
 */
export function createReadReplica(settings: ReplicaSettings): ReadReplica {
  const { db, maxLagMs, now = Date.now } = settings
  let replayedThrough = Number.NEGATIVE_INFINITY
  let lagMs = Number.POSITIVE_INFINITY
  /** Why it is out of use, as the last probe (or a failed read) found. */
  let outOfUse: OutOfUse = 'not probed yet'
  const served = { replica: 0, primary: 0 }
  const listeners: ((outOfUse: OutOfUse) => void)[] = []
  const inUse = () => outOfUse === undefined && now() - replayedThrough < maxLagMs

  /** Whether the listeners were last told it is in use; undefined before the first verdict. */
  let toldInUse: boolean | undefined
  function judged(next: OutOfUse) {
    outOfUse = next
    if (toldInUse === (next === undefined)) return
    toldInUse = next === undefined
    for (const listener of listeners) listener(next)
  }

  function lost(why: string) {
    replayedThrough = Number.NEGATIVE_INFINITY
    lagMs = Number.POSITIVE_INFINITY
    judged(why)
  }

  async function probeOnce() {
    const sentAt = now()
    try {
      const answer = await settings.probe()
      if (!answer.standby) return lost('it is not a standby (pg_is_in_recovery() is false)')
      if (answer.lagMs === null) return lost('its replay lag cannot be told yet')
      lagMs = Math.max(0, answer.lagMs)
      replayedThrough = sentAt - lagMs
      judged(lagMs < maxLagMs ? undefined : `it lags by ${Math.round(lagMs)} ms`)
    } catch (error) {
      if (!closed) lost(`it does not answer: ${(error as Error).message}`)
    }
  }

  // Each probe waits for the one before: a replica that does not answer gets one at a time.
  let timer: NodeJS.Timeout | undefined
  let closed = false
  const everyMs = Math.min(PROBE_EVERY_MS, maxLagMs / 4)
  const probing = async () => {
    await probeOnce()
    if (!closed) timer = setTimeout(probing, everyMs).unref()
  }
  void probing()

  return {
    db,
    maxLagMs,
    lagMs: () => lagMs,
    inUse,
    served,
    onChange(listener) {
      listeners.push(listener)
      // A verdict given before the listener came is its first.
      if (toldInUse !== undefined) listener(outOfUse)
    },

    async read(newestWrite, onReplica, onPrimary) {
      const mustSeeRecentWrite = newestWrite !== undefined && now() - newestWrite < maxLagMs
      if (!mustSeeRecentWrite && inUse()) {
        try {
          const answer = await onReplica()
          served.replica += 1
          return answer
        } catch (error) {
          // No request fails because of the replica: the primary answers it.
          lost(`a read failed on it: ${(error as Error).message}`)
        }
      }
      served.primary += 1
      return onPrimary()
    },

    // A probe in flight ends with the connections, whose closing bounds it.
    async close() {
      closed = true
      clearTimeout(timer)
      await settings.closeConnections()
    },
  }
}
