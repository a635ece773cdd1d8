import { afterEach, describe, expect, it, vi } from 'vitest'
import type { Database } from '../src/db/database.js'
import { createReadReplica, type ProbeAnswer } from '../src/db/read-replica.js'

/** Probed every 100 ms (a quarter of it). */
const MAX_LAG_MS = 400

/**
 * The replica's routing on a clock the test sets and probes it answers: which database a
 * read goes to, after which write, lag, failure or refusal. The engines are
 * postgres-replica.test.ts's.
 */
function replicaWithProbe() {
  let clock = 1_000_000
  let answer: ProbeAnswer | Error = { lagMs: 0, standby: true }
  let probes = 0
  const changes: (string | undefined)[] = []
  const replica = createReadReplica({
    db: {} as Database,
    maxLagMs: MAX_LAG_MS,
    now: () => clock,
    probe: async () => {
      probes += 1
      if (answer instanceof Error) throw answer
      return answer
    },
    closeConnections: async () => {},
  })
  replica.onChange((outOfUse) => changes.push(outOfUse))
  const read = (newestWrite?: number) =>
    replica.read(
      newestWrite,
      async () => 'replica',
      async () => 'primary',
    )
  return {
    replica,
    read,
    changes,
    /** The probe's answer from now on, once the next probe has been made with it. */
    async answers(next: ProbeAnswer | Error) {
      answer = next
      const seen = probes
      await vi.waitUntil(() => probes > seen + 1, { timeout: 5000 })
    },
    advance(ms: number) {
      clock += ms
    },
    now: () => clock,
  }
}

describe('the read replica', () => {
  const opened: ReturnType<typeof replicaWithProbe>[] = []
  const open = () => {
    const each = replicaWithProbe()
    opened.push(each)
    return each
  }
  afterEach(async () => {
    for (const each of opened.splice(0)) await each.replica.close()
  })

  it('serves reads while its lag is under the maximum, and a writer reads the primary that long', async () => {
    const { replica, read, answers, now, changes } = open()
    expect(await read()).toBe('primary')
    await answers({ lagMs: 100, standby: true })
    // The first verdict is told, then only changes.
    expect(changes).toEqual([undefined])
    expect(replica.inUse()).toBe(true)
    expect(replica.lagMs()).toBe(100)
    expect(await read()).toBe('replica')
    expect(await read(now() - MAX_LAG_MS + 1)).toBe('primary')
    expect(await read(now() - MAX_LAG_MS)).toBe('replica')
    expect(replica.served).toEqual({ replica: 2, primary: 2 })
  })

  it('counts the age of the measurement: a lag under the maximum, measured long enough ago, is too old', async () => {
    const { replica, read, answers, advance } = open()
    await answers({ lagMs: 100, standby: true })
    expect(await read()).toBe('replica')
    advance(299)
    expect(await read()).toBe('replica')
    advance(1)
    expect(replica.inUse()).toBe(false)
    expect(await read()).toBe('primary')
  })

  it('is out of use while it lags, does not answer, is no standby or cannot tell its lag', async () => {
    const { replica, read, answers, changes } = open()
    await answers({ lagMs: 0, standby: true })
    for (const [answer, why] of [
      [{ lagMs: MAX_LAG_MS, standby: true }, `it lags by ${MAX_LAG_MS} ms`],
      [new Error('connect ECONNREFUSED'), 'it does not answer: connect ECONNREFUSED'],
      [{ lagMs: 0, standby: false }, 'it is not a standby (pg_is_in_recovery() is false)'],
      [{ lagMs: null, standby: true }, 'its replay lag cannot be told yet'],
    ] as const) {
      await answers(answer)
      expect(replica.inUse()).toBe(false)
      expect(await read()).toBe('primary')
      expect(changes.at(-1)).toBe(why)
      await answers({ lagMs: 0, standby: true })
      expect(await read()).toBe('replica')
      expect(changes.at(-1)).toBeUndefined()
    }
    expect(replica.lagMs()).toBe(0)
  })

  it('answers a read that fails on the replica from the primary, and sends the next ones there', async () => {
    const { replica, answers } = open()
    await answers({ lagMs: 0, standby: true })
    const failing = async () => {
      throw new Error('terminating connection due to administrator command')
    }
    expect(await replica.read(undefined, failing, async () => 'primary')).toBe('primary')
    expect(replica.inUse()).toBe(false)
    expect(replica.served).toEqual({ replica: 0, primary: 1 })
    await answers({ lagMs: 0, standby: true })
    expect(replica.inUse()).toBe(true)
  })
})
