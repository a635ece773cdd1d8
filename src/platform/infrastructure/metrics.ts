import { monitorEventLoopDelay } from 'node:perf_hooks'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client'
import type { ReadReplica } from '../../db/read-replica.js'
import { registerCollectedMetric } from './prom-client-adapter.js'
import { RequestDurations } from './request-durations.js'

/** Requests per second are counted over this many one-second buckets. */
const WINDOW_SECONDS = 10
const NANOSECONDS_PER_MS = 1e6

/**
 * Requests answered in the last WINDOW_SECONDS, in one bucket per second: a sliding
 * window, so the rate is measured, never extrapolated from a single second.
 */
function slidingRequestCount(now: () => number) {
  const buckets = new Array<number>(WINDOW_SECONDS).fill(0)
  let current = Math.floor(now() / 1000)
  const advance = () => {
    const second = Math.floor(now() / 1000)
    for (let step = 1; step <= Math.min(second - current, WINDOW_SECONDS); step += 1) {
      buckets[(current + step) % WINDOW_SECONDS] = 0
    }
    current = Math.max(current, second)
  }
  return {
    add() {
      advance()
      const index = current % WINDOW_SECONDS
      buckets[index] = (buckets[index] ?? 0) + 1
    },
    perSecond() {
      advance()
      return buckets.reduce((sum, count) => sum + count, 0) / WINDOW_SECONDS
    },
  }
}

/**
 * The measured figures of this instance, for GET /metrics (prom-client, in a registry of
 * its own) and for the `metricsUpdated` subscription.
 */
export function createServiceMetrics({ now = Date.now } = {}) {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const durations = new RequestDurations()
  registerCollectedMetric(registry, durations)
  // Counted in plain numbers and handed to prom-client when scraped: its inc hashes the
  // labels on every call, a bound child's too.
  const apiRequests = { 1: 0, 2: 0 }
  new Counter({
    name: 'api_requests_total',
    help: 'REST requests by the API version that answered them',
    labelNames: ['version'],
    registers: [registry],
    collect() {
      for (const version of [1, 2] as const) {
        if (apiRequests[version] > 0) this.inc({ version }, apiRequests[version])
        apiRequests[version] = 0
      }
    },
  })
  const deprecatedFieldUses = new Counter({
    name: 'graphql_deprecated_field_uses_total',
    help: 'GraphQL operations that selected a field marked @deprecated, by field',
    labelNames: ['field'],
    registers: [registry],
  })
  const requests = slidingRequestCount(now)
  const loopDelay = monitorEventLoopDelay({ resolution: 10 })
  loopDelay.enable()
  const startedAt = now()

  return {
    registry,

    observeRequest(method: string, route: string, statusCode: number, seconds: number) {
      durations.observe(method, route, statusCode, seconds)
      requests.add()
    },

    countApiRequest(version: 1 | 2) {
      apiRequests[version] += 1
    },

    countDeprecatedFieldUse(field: string) {
      deprecatedFieldUses.inc({ field })
    },

    /** The read replica's lag and the reads each database served, read when scraped. */
    observeReplica(replica: Pick<ReadReplica, 'lagMs' | 'served'>) {
      new Gauge({
        name: 'database_replica_lag_seconds',
        help: 'Replay lag of the read replica as its last probe measured it; +Inf while it does not answer or is no standby',
        registers: [registry],
        collect() {
          this.set(replica.lagMs() / 1000)
        },
      })
      const reported = { replica: 0, primary: 0 }
      new Counter({
        name: 'database_replica_reads_total',
        help: 'Reads the read replica may serve (product lists and reads by id that reach the database), by the database that served them',
        labelNames: ['served_by'],
        registers: [registry],
        collect() {
          for (const database of ['replica', 'primary'] as const) {
            this.inc({ served_by: database }, replica.served[database] - reported[database])
            reported[database] = replica.served[database]
          }
        },
      })
    },

    requestsPerSecond: () => requests.perSecond(),
    uptimeSeconds: () => (now() - startedAt) / 1000,

    /** The 99th percentile of the event loop's delay since the last call, in ms. */
    takeEventLoopDelayMs() {
      const p99 = loopDelay.count > 0 ? loopDelay.percentile(99) / NANOSECONDS_PER_MS : 0
      loopDelay.reset()
      return p99
    },

    stop() {
      loopDelay.disable()
      registry.clear()
    },
  }
}

export type ServiceMetrics = ReturnType<typeof createServiceMetrics>

/** Times every HTTP response into `metrics`, labelled by its route's pattern. */
export const requestMetrics = fp(
  async (app: FastifyInstance, { metrics }: { metrics: ServiceMetrics }) => {
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched'
      metrics.observeRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000)
      done()
    })
    app.addHook('onClose', async () => metrics.stop())
  },
  { name: 'request-metrics' },
)
