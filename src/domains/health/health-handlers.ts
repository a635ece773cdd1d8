import type { components } from '../../../generated/openapi.js'
import type { ServiceHandlers } from '../../http/operations.js'
import { unavailable } from '../../platform/errors.js'
import type { Drain } from '../../platform/infrastructure/drain.js'

type SlowDependency = NonNullable<components['schemas']['Readiness']['slow']>[number]

export interface Dependency {
  name: SlowDependency | 'database'
  ping(): Promise<void>
  /** Whether it answers, but slower than its deadline (requests then do without it). */
  slow?(): boolean
}

/** A dependency that has not answered by then counts as down: /ready never hangs. */
const PING_TIMEOUT_MS = 2000

const pingInTime = (dependency: Dependency) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no answer in time')), PING_TIMEOUT_MS)
    dependency
      .ping()
      .then(resolve, reject)
      .finally(() => clearTimeout(timer))
  })

export function createHealthHandlers(dependencies: Dependency[], drain: Pick<Drain, 'draining'>) {
  return {
    async getHealth() {
      return { data: { status: 'ok' as const } }
    },

    // deploy/haproxy.cfg's check reads these answers' words: a 503 naming Redis alone
    // keeps an instance in the pool, one naming the database or the drain takes it out.
    async getReadiness(request) {
      if (drain.draining()) throw unavailable('Not ready: shutting down')
      const results = await Promise.allSettled(dependencies.map(pingInTime))
      const down = dependencies.filter((_, index) => results[index]?.status === 'rejected')
      if (down.length > 0) {
        request.log.warn({ down: down.map((each) => each.name) }, 'not ready')
        throw unavailable(`Not ready: ${down.map((each) => each.name).join(', ')} not answering`)
      }
      const slow = dependencies.filter((each) => each.slow?.()).map((each) => each.name)
      if (slow.length === 0) return { data: { status: 'ok' as const } }
      return { data: { status: 'degraded' as const, slow: slow as SlowDependency[] } }
    },
  } satisfies Partial<ServiceHandlers>
}
