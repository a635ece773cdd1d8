import type { ServiceHandlers } from '../../http/operations.js'
import { unavailable } from '../../platform/errors.js'

export interface Dependency {
  name: string
  ping(): Promise<void>
}

export function createHealthHandlers(dependencies: Dependency[]) {
  return {
    async getHealth() {
      return { data: { status: 'ok' as const } }
    },

    async getReadiness(request) {
      const results = await Promise.allSettled(dependencies.map((each) => each.ping()))
      const down = dependencies.filter((_, index) => results[index]?.status === 'rejected')
      if (down.length > 0) {
        request.log.warn({ down: down.map((each) => each.name) }, 'not ready')
        throw unavailable(`Not ready: ${down.map((each) => each.name).join(', ')} not answering`)
      }
      return { data: { status: 'ok' as const } }
    },
  } satisfies Partial<ServiceHandlers>
}
