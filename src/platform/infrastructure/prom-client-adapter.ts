import type { Metric, Registry } from 'prom-client'

/** What prom-client's registry reads of a metric when it is scraped. */
export interface CollectedMetric {
  readonly name: string
  readonly help: string
  readonly type: string
  readonly aggregator: string
  get(): Promise<unknown> | unknown
}

/**
 * Registers a metric that is not one of prom-client's four classes (prom-client 15.1.3,
 * pinned): its registry reads only `name`, `help`, `type`, `aggregator` and `get()`, but
 * its typings accept its own classes only. prom-client has no API for a collector that
 * reports what it has aggregated itself: https://github.com/siimon/prom-client/issues/241.
 * test/request-durations.test.ts fails if what the registry writes of such a metric
 * stops being what its own Histogram writes.
 */
export function registerCollectedMetric(registry: Registry, metric: CollectedMetric): void {
  registry.registerMetric(metric as unknown as Metric)
}
