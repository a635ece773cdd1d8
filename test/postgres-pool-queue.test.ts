import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'

/**
 * postgres.js keeps its pool's connections in queues (open, busy, full) whose shift leaves
 * the taken slot behind until the queue is empty. Under steady load the busy queue is never
 * emptied by shift: each query took one connection from its head and put it back at its
 * tail, and each move first looked for the connection through every slot ever left behind.
 * The scan grew by one slot per query (52,000 after 15 s of creates), a CPU cost that grew
 * with the service's uptime under load. patches/ compacts the queue; these tests fail
 * without it.
 */

interface Queue<T> {
  readonly length: number
  push(x: T): T
  shift(): T | undefined
  remove(x: T): T | null
}

// The module the service runs (postgres.js's ES build); its package exports no subpath.
const require = createRequire(import.meta.url)
const queueModule = join(dirname(require.resolve('postgres')), '..', '..', 'src', 'queue.js')
const { default: Queue } = (await import(pathToFileURL(queueModule).href)) as {
  default: <T>(initial?: T[]) => Queue<T>
}

const POOL_SIZE = 10
const QUERIES = 100_000

/** Counts the slots Array.prototype.indexOf looks at while `work` runs. */
function slotsScannedBy(work: () => void): number {
  const indexOf = Array.prototype.indexOf
  let scanned = 0
  Array.prototype.indexOf = function (this: unknown[], ...args: [unknown, number?]) {
    scanned += this.length - (args[1] ?? 0)
    return Reflect.apply(indexOf, this, args)
  }
  try {
    work()
  } finally {
    Array.prototype.indexOf = indexOf
  }
  return scanned
}

describe("postgres.js's pool queue (patched)", () => {
  it('keeps first-in first-out order, removal and length', () => {
    const queue = Queue(['a', 'b', 'c', 'd'])
    expect(queue.shift()).toBe('a')
    expect(queue.remove('c')).toBe('c')
    expect(queue.remove('a')).toBeNull()
    expect(queue.length).toBe(2)
    queue.push('e')
    expect([queue.shift(), queue.shift(), queue.shift()]).toEqual(['b', 'd', 'e'])
    expect(queue.length).toBe(0)
    expect(queue.shift()).toBeUndefined()
  })

  it('looks through what it holds, not through every slot a steady load has used', () => {
    const connections = Array.from({ length: POOL_SIZE }, (_, id) => ({ id }))
    const busy = Queue(connections)
    // What the pool does per query when every connection is busy: take the head, move it
    // to busy (remove, then push).
    for (let query = 0; query < QUERIES; query++) {
      const connection = busy.shift() as (typeof connections)[number]
      busy.remove(connection)
      busy.push(connection)
    }
    const stranger = { id: -1 }
    expect(slotsScannedBy(() => busy.remove(stranger))).toBeLessThanOrEqual(2 * POOL_SIZE)
    expect(busy.length).toBe(POOL_SIZE)
    expect(busy.remove(connections[3] as (typeof connections)[number])).toBe(connections[3])
    expect(busy.length).toBe(POOL_SIZE - 1)
  })
})
