import type { ServiceHandlers } from '../../http/operations.js'
import { unavailable } from '../../platform/errors.js'

export interface Dependency {
  name: string
  ping(): Promise<void>
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

export function createHealthHandlers(dependencies: Dependency[]) {
  return {
    async getHealth() {
      return { data: { status: 'ok' as const } }
    },

    async getReadiness(request) {
      const results = await Promise.allSettled(dependencies.map(pingInTime))
      const down = dependencies.filter((_, index) => results[index]?.status === 'rejected')
      if (down.length > 0) {
        request.log.warn({ down: down.map((each) => each.name) }, 'not ready')
        throw unavailable(`Not ready: ${down.map((each) => each.name).join(', ')} not answering`)
      }
      return { data: { status: 'ok' as const } }
    },
  } satisfies Partial<ServiceHandlers>
}
