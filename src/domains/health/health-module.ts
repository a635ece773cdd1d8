import type { Infrastructure } from '../domain-module.js'
import { createHealthHandlers, type Dependency } from './health-handlers.js'

/**
 * Liveness, and readiness: every outside dependency this instance needs answers, and the
 * instance is not draining before it closes.
 */
export function createHealthModule({
  database,
  redis,
  drain,
}: Pick<Infrastructure, 'database' | 'redis' | 'drain'>) {
  const dependencies: Dependency[] = [{ name: 'database', ping: database.ping }]
  const { replica } = database
  // Never a reason to be unready: its reads go to the primary while it is out of use.
  if (replica)
    dependencies.push({ name: 'replica', ping: async () => {}, slow: () => !replica.inUse() })
  if (redis) {
    dependencies.push({ name: 'redis', ping: redis.ping, slow: () => !redis.answersInTime() })
  }
  return { name: 'health', handlers: createHealthHandlers(dependencies, drain) }
}
