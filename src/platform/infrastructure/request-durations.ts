/** The upper bounds of the buckets, in seconds. */
export const BUCKETS: readonly number[] = [
  0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
]

type Labels = { method: string; route: string; status_code: number }

/** A sample as prom-client's registry reads it from a metric's get(). */
interface Sample {
  metricName: string
  labels: Partial<Labels> & { le?: number | '+Inf' }
  value: number
}

interface Series {
  labels: Labels
  /** Observations per bucket, not cumulative; the last is above every bound (+Inf). */
  counts: number[]
  sum: number
  count: number
}

/**
 * `http_request_duration_seconds`: HTTP requests by method, route pattern and status,
 * the histogram prom-client keeps, observed for a fraction of its cost. prom-client
 * hashes a series' labels into a string key on every observation, a bound child's too;
 * here a series is found in maps keyed by the route's and the method's own strings,
 * whose hashes V8 keeps, and by the status.
 * prom-client's registry writes it out as it writes its own histograms.
 */
export class RequestDurations {
  readonly name = 'http_request_duration_seconds'
  readonly help = 'HTTP requests by method, route and status, and how long they took'
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  readonly #routes = new Map<string, Map<string, Map<number, Series>>>()

  observe(method: string, route: string, statusCode: number, seconds: number) {
    const series = this.#seriesOf(method, route, statusCode)
    let bucket = 0
    while (bucket < BUCKETS.length && seconds > (BUCKETS[bucket] as number)) bucket += 1
    series.counts[bucket] = (series.counts[bucket] as number) + 1
    series.sum += seconds
    series.count += 1
  }

  #seriesOf(method: string, route: string, statusCode: number): Series {
    const methods = entryOf(this.#routes, route, () => new Map())
    const statuses = entryOf(methods, method, () => new Map())
    return entryOf(statuses, statusCode, () => ({
      labels: { method, route, status_code: statusCode },
      counts: new Array<number>(BUCKETS.length + 1).fill(0),
      sum: 0,
      count: 0,
    }))
  }

  /** What prom-client's Histogram#get answers: each series' buckets, sum and count. */
  get() {
    const values: Sample[] = []
    for (const methods of this.#routes.values())
      for (const statuses of methods.values())
        for (const series of statuses.values()) values.push(...this.#samplesOf(series))
    const { name, help, type, aggregator } = this
    return { name, help, type, aggregator, values }
  }

  #samplesOf({ labels, counts, sum, count }: Series): Sample[] {
    const bucketName = `${this.name}_bucket`
    let cumulative = 0
    const buckets = BUCKETS.map((bound, index): Sample => {
      cumulative += counts[index] as number
      return { labels: { le: bound, ...labels }, value: cumulative, metricName: bucketName }
    })
    return [
      ...buckets,
      { labels: { le: '+Inf', ...labels }, value: count, metricName: bucketName },
      { labels: { ...labels }, value: sum, metricName: `${this.name}_sum` },
      { labels: { ...labels }, value: count, metricName: `${this.name}_count` },
    ]
  }

  reset() {
    this.#routes.clear()
  }
}

function entryOf<K, V>(map: Map<K, V>, key: K, create: () => V): V {
  let value = map.get(key)
  if (value === undefined) {
    value = create()
    map.set(key, value)
  }
  return value
}
