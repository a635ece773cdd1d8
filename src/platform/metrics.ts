import { monitorEventLoopDelay } from 'node:perf_hooks'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client'

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
  const durations = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP requests by method, route and status, and how long they took',
    labelNames: ['method', 'route', 'status_code'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  })
  const apiRequests = new Counter({
    name: 'api_requests_total',
    help: 'REST requests by the API version that answered them',
    labelNames: ['version'],
    registers: [registry],
  })
  // Bound once: a request counts without hashing its labels.
  const apiRequestsOf = { 1: apiRequests.labels('1'), 2: apiRequests.labels('2') }
  const deprecatedFieldUses = new Counter({
    name: 'graphql_deprecated_field_uses_total',
    help: 'GraphQL operations that selected a field marked @deprecated, by field',
    labelNames: ['field'],
    registers: [registry],
  })
  // Bound once per method, route pattern and status (a set the routes bound): prom-client
  // would otherwise sort and join the labels of every observation.
  const boundDurations = new Map<string, Histogram.Internal<string>>()
  const durationsOf = (method: string, route: string, statusCode: number) => {
    const key = `${method} ${statusCode} ${route}`
    let bound = boundDurations.get(key)
    if (!bound) {
      bound = durations.labels({ method, route, status_code: statusCode })
      boundDurations.set(key, bound)
    }
    return bound
  }
  const requests = slidingRequestCount(now)
  const loopDelay = monitorEventLoopDelay({ resolution: 10 })
  loopDelay.enable()
  const startedAt = now()

  return {
    registry,

    observeRequest(method: string, route: string, statusCode: number, seconds: number) {
      durationsOf(method, route, statusCode).observe(seconds)
      requests.add()
    },

    countApiRequest(version: 1 | 2) {
      apiRequestsOf[version].inc()
    },

    countDeprecatedFieldUse(field: string) {
      deprecatedFieldUses.inc({ field })
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
