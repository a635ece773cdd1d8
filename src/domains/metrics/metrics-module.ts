import { Gauge } from 'prom-client'
import type { Metrics } from '../../../generated/graphql.js'
import { callerOf } from '../../graphql/context.js'
import { followTopic } from '../../graphql/subscriptions.js'
import type { ServiceHandlers } from '../../http/operations.js'
import { forbidden } from '../../platform/errors.js'
import type { DomainResolvers, Infrastructure } from '../domain-module.js'
import { type MetricsUpdatedEvent, metricsTopics } from './metrics-topics.js'

/**
 * Live figures of this instance: published every METRICS_INTERVAL_MS on
 * `metricsUpdated` (admins only), and scraped at GET /metrics with Node's own.
 */
export function createMetricsModule({
  events,
  metrics,
  config,
  log,
  instanceId,
}: Pick<Infrastructure, 'events' | 'metrics' | 'config' | 'log' | 'instanceId'>) {
  let connectedClients = 0
  let eventLoopDelayMs = 0
  let publishing: NodeJS.Timeout | undefined

  const figures = (): Metrics => ({
    instanceId,
    timestamp: new Date().toISOString(),
    uptimeSeconds: metrics.uptimeSeconds(),
    requestsPerSecond: metrics.requestsPerSecond(),
    activeSubscriptions: events.activeSubscriptions(),
    connectedClients,
    heapUsedBytes: process.memoryUsage().heapUsed,
    eventLoopDelayMs,
  })
  const gauges: [string, string, () => number][] = [
    [
      'api_requests_per_second',
      'HTTP requests answered per second, over 10 s',
      metrics.requestsPerSecond,
    ],
    ['api_active_subscriptions', 'Live GraphQL subscriptions', events.activeSubscriptions],
    ['api_connected_clients', 'Open GraphQL WebSockets', () => connectedClients],
    [
      'api_event_loop_delay_ms',
      'Event-loop delay p99 of the last interval, ms',
      () => eventLoopDelayMs,
    ],
    ['api_uptime_seconds', 'Seconds since this instance started', metrics.uptimeSeconds],
  ]
  for (const [name, help, read] of gauges) {
    new Gauge({
      name,
      help,
      registers: [metrics.registry],
      collect() {
        this.set(read())
      },
    })
  }

  async function publish() {
    eventLoopDelayMs = metrics.takeEventLoopDelayMs()
    await events.publish(metricsTopics.updated, { metricsUpdated: figures() })
  }

  return {
    name: 'metrics',
    handlers: {
      async getMetrics(_request, reply) {
        const text = await metrics.registry.metrics()
        return reply.type(metrics.registry.contentType).send(text)
      },
    } satisfies Partial<ServiceHandlers>,
    resolvers: {
      Subscription: {
        metricsUpdated: {
          subscribe: (_root, _args, context) => {
            if (callerOf(context).role !== 'admin') throw forbidden('Metrics are for admins')
            return followTopic(events, metricsTopics.updated, context)
          },
          resolve: (event: MetricsUpdatedEvent) => event.metricsUpdated,
        },
      },
    } satisfies DomainResolvers,
    sockets: {
      socketOpened: () => {
        connectedClients += 1
      },
      socketClosed: () => {
        connectedClients -= 1
      },
    },
    async start() {
      publishing = setInterval(() => {
        publish().catch((error: unknown) => log.warn({ err: error }, 'metrics not published'))
      }, config.metricsIntervalMs)
      publishing.unref()
    },
    async stop() {
      clearInterval(publishing)
    },
  }
}
