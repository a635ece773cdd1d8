import { Histogram, Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { registerCollectedMetric } from '../src/platform/infrastructure/prom-client-adapter.js'
import { BUCKETS, RequestDurations } from '../src/platform/infrastructure/request-durations.js'

/**
 * http_request_duration_seconds is kept by hand for speed: what a scraper reads must be
 * what prom-client's own Histogram, with the same buckets and labels, would write.
 */

type Observation = [method: string, route: string, statusCode: number, seconds: number]

function bothWritten(observations: Observation[]) {
  const ours = new Registry()
  const durations = new RequestDurations()
  registerCollectedMetric(ours, durations)
  const theirs = new Registry()
  const histogram = new Histogram({
    name: durations.name,
    help: durations.help,
    labelNames: ['method', 'route', 'status_code'],
    buckets: [...BUCKETS],
    registers: [theirs],
  })
  for (const [method, route, statusCode, seconds] of observations) {
    durations.observe(method, route, statusCode, seconds)
    histogram.observe({ method, route, status_code: statusCode }, seconds)
  }
  return { ours, theirs, durations }
}

describe('request durations', () => {
  it('are written as prom-client writes the same histogram', async () => {
    const { ours, theirs } = bothWritten([
      ['GET', '/products', 200, 0.0004],
      ['GET', '/products', 200, 0.001], // on a bound: counted in that bucket
      ['GET', '/products', 200, 0.0011],
      ['GET', '/products', 304, 0.02],
      ['POST', '/products', 400, 0.003],
      ['HEAD', '/products', 200, 0.3],
      ['GET', '/products/:id', 404, 12], // past every bound: +Inf only
      ['GET', 'unmatched', 404, 0.07],
      ['POST', '/products', 400, 2.5],
    ])
    const written = await ours.metrics()
    expect(written).toBe(await theirs.metrics())
    expect(written).toContain(
      'http_request_duration_seconds_bucket{le="0.001",method="GET",route="/products",status_code="200"} 2',
    )
    expect(written).toContain(
      'http_request_duration_seconds_count{method="POST",route="/products",status_code="400"} 2',
    )
  })

  it('are written as prom-client writes them in JSON, and before any request', async () => {
    const { ours, theirs } = bothWritten([['GET', '/health/live', 200, 0.0001]])
    // Without exemplars, which this histogram does not keep (prom-client's are null).
    const samples = async (registry: Registry) =>
      (await registry.getMetricsAsJSON()).map(({ values, ...metric }) => ({
        ...metric,
        values: values.map((sample) => ({ ...sample, exemplar: undefined })),
      }))
    expect(await samples(ours)).toEqual(await samples(theirs))
    const empty = bothWritten([])
    expect(await empty.ours.metrics()).toBe(await empty.theirs.metrics())
  })

  it('start again from nothing when the registry resets them', async () => {
    const { ours, durations } = bothWritten([['GET', '/products', 200, 0.01]])
    ours.resetMetrics()
    expect((await ours.metrics()).trim().split('\n')).toHaveLength(2)
    durations.observe('GET', '/products', 200, 0.01)
    expect(await ours.metrics()).toContain(
      'http_request_duration_seconds_count{method="GET",route="/products",status_code="200"} 1',
    )
  })
})
