import { sql } from 'drizzle-orm'
import { startBaseline } from './baseline.js'
import { fanout } from './fanout.js'
import { BENCH_ADMIN, benchInstances } from './instances.js'
import { CONNECTIONS, type Measurement, measure, type Workload } from './measure.js'
import { revocationTime } from './revocation.js'
import { openBenchDatabase, seedMessages, seedProducts } from './seed.js'
import { tracingCost } from './tracing-cost.js'

// `make bench`: each operation on the service and on a bare baseline of the same work, in
// one run, and ours/baseline; how the lists' cost changes from one catalog size to the
// next (SCALES); then subscription fan-out over two instances (through Redis when
// REDIS_URL is set). DATABASE_URL for Postgres; DURATION and WARMUP in seconds.
// BENCH_TRACING=1: (c) and (g) alone, with tracing off and on (tracing-cost.ts).
// BENCH_REVOCATION=1: from a logout-all to its sockets closed on two instances (revocation.ts).
if (process.env.BENCH_TRACING) process.exit(await tracingCost())
if (process.env.BENCH_REVOCATION) process.exit(await revocationTime())

const SCALES = (process.env.SCALES ?? '100000,1000000').split(',').map(Number)
const DATABASE_URL = process.env.DATABASE_URL

const database = await openBenchDatabase()
await database.db.execute(sql`truncate products, messages, outbox, orders restart identity cascade`)
await seedMessages(database.db, 1000)

const startInstance = benchInstances(database)

const instances = [await startInstance(), await startInstance()]
const [first] = instances as [(typeof instances)[number]]
const uncached = await startInstance({ CACHE_TTL_SECONDS: '0' })
const baseline = await startBaseline(database, DATABASE_URL, process.env.REDIS_URL)

const login = await fetch(`${first.url}/auth/login`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(BENCH_ADMIN),
})
const { accessToken } = ((await login.json()) as { data: { accessToken: string } }).data
const json = { 'content-type': 'application/json' }
const graphql = (query: string): Workload['request'] => ({
  path: '/graphql',
  method: 'POST',
  headers: json,
  body: JSON.stringify({ query }),
})

/** Page 5000, or the last page of a smaller catalog. */
const deepPage = (size: number) => Math.min(5000, size / 10)

const lists = (size: number): Workload[] => [
  { name: '(a) GET /products', request: { path: '/products' }, status: 200 },
  {
    name: '(b) GET /products filtered, page 3',
    request: { path: '/products?category=category-10&minPrice=100&maxPrice=500&search=oak&page=3' },
    status: 200,
  },
  {
    name: 'GET /products page 5000',
    request: { path: `/products?page=${deepPage(size)}` },
    status: 200,
  },
]

const operations = (size: number): Workload[] => [
  { name: '(c) GET /products/{id}', request: { path: `/products/${size / 2}` }, status: 200 },
  {
    name: '(d) POST /products',
    request: {
      path: '/products',
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${accessToken}` },
      body: JSON.stringify({ name: 'Bench lamp', price: 9.99, category: 'bench' }),
    },
    status: 201,
  },
  {
    name: '(e) POST /products invalid → 400',
    request: {
      path: '/products',
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${accessToken}` },
      body: JSON.stringify({ name: '', price: -1, category: 'bench' }),
    },
    status: 400,
  },
  {
    name: '(f) GraphQL messages(limit 50)',
    request: graphql('{ messages(limit: 50) { id chatId text author createdAt } }'),
    status: 200,
  },
  {
    name: '(g) GraphQL sendMessage',
    request: graphql('mutation { sendMessage(text: "bench", author: "bench") { id createdAt } }'),
    status: 200,
  },
]

/** Products every order draws on, given stock no run can exhaust. */
const ORDERED_PRODUCTS = 1000

/**
 * Orders of two lines each, over ORDERED_PRODUCTS products in turn: stock is reserved
 * under row locks, so bodies that all named one product would measure only its lock.
 */
async function placingOrders(): Promise<Workload> {
  await database.db.execute(
    sql`update products set stock = 1000000000 where id <= ${ORDERED_PRODUCTS}`,
  )
  const bodies = Array.from({ length: ORDERED_PRODUCTS }, (_, index) =>
    JSON.stringify({
      items: [
        { productId: index + 1, quantity: 1 },
        { productId: ((index + 1) % ORDERED_PRODUCTS) + 1, quantity: 2 },
      ],
    }),
  )
  return {
    name: 'POST /orders',
    request: {
      path: '/orders',
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${accessToken}` },
    },
    bodies,
    status: 201,
  }
}

let failures = 0
/** Measures a workload, counting its failures toward the run's verdict. */
async function measured(baseUrl: string, workload: Workload) {
  const measurement = await measure(baseUrl, workload)
  failures += measurement.failures
  return measurement
}
const row = (cells: (string | number)[]) => console.log(`| ${cells.join(' | ')} |`)
const cell = ({ requestsPerSecond, p99Ms, failures: failed }: Measurement) =>
  `${requestsPerSecond} (p99 ${p99Ms} ms${failed ? `, ${failed} failed` : ''})`
const ratio = (ours: Measurement, theirs: Measurement) =>
  `${(ours.requestsPerSecond / theirs.requestsPerSecond).toFixed(2)}×`

/** A cursor as deep as page 5000: one slow numbered read to find it, then cheap ones. */
async function deepCursor(size: number) {
  const page = await fetch(`${uncached.url}/products?page=${deepPage(size) - 1}`)
  const { pagination } = (await page.json()) as { pagination: { nextCursor: string } }
  return pagination.nextCursor
}

console.log(
  `${database.kind}, pub/sub ${first.events.kind}, ${CONNECTIONS} connections, Node ${process.version}\n`,
)
const scaleRows = new Map<string, Measurement[]>()
for (const [index, size] of SCALES.entries()) {
  await seedProducts(database.db, size, (SCALES[index - 1] ?? 0) + 1)
  const scaled = [
    ...lists(size),
    {
      name: 'GET /products by cursor at page 5000',
      request: { path: `/products?cursor=${await deepCursor(size)}` },
      status: 200,
    },
  ]
  for (const workload of scaled) {
    const measurement = await measured(uncached.url, workload)
    scaleRows.set(workload.name, [...(scaleRows.get(workload.name) ?? []), measurement])
  }
  if (index > 0) continue
  console.log(`${size} products: req/s (p99) of ours and of the bare baseline, same run\n`)
  row(['workload', 'ours', 'ours, cache off', 'baseline', 'ours / baseline'])
  row(['---', '---:', '---:', '---:', '---:'])
  for (const workload of [...lists(size), ...operations(size)]) {
    const ours = await measured(first.url, workload)
    const baselined = await measured(baseline.url, workload)
    const off = scaleRows.get(workload.name)?.[0]
    row([workload.name, cell(ours), off ? cell(off) : '', cell(baselined), ratio(ours, baselined)])
  }
  // v2's envelope beside the same read's baseline: what the envelope costs.
  const byId = `/products/${size / 2}`
  const v2 = {
    name: '(c) v2 GET /api/v2/products/{id}',
    request: { path: `/api/v2${byId}` },
    status: 200,
  }
  const v2Ours = await measured(first.url, v2)
  const v2Baseline = await measured(baseline.url, { ...v2, request: { path: byId } })
  row([v2.name, cell(v2Ours), '', cell(v2Baseline), ratio(v2Ours, v2Baseline)])
  // The bare baseline has no orders: this row is ours alone.
  row(['POST /orders', cell(await measured(first.url, await placingOrders())), '', '', ''])
}

console.log(`\nLists with the cache off as the catalog grows: req/s (p99)\n`)
row(['workload', ...SCALES.map((size) => `${size} products`), 'last / first'])
row(['---', ...SCALES.map(() => '---:'), '---:'])
for (const [name, measurements] of scaleRows) {
  const [smallest, largest] = [measurements[0], measurements.at(-1)] as [Measurement, Measurement]
  row([name, ...measurements.map(cell), ratio(largest, smallest)])
}

const fan = await fanout(
  instances.map((instance) => instance.url),
  Number(process.env.SUBSCRIBERS ?? 500),
  Number(process.env.MESSAGES ?? 50),
)
failures += fan.expected - fan.delivered + fan.duplicates
console.log(
  `\nfan-out over 2 instances (${first.events.kind}): ${fan.subscribers} subscribers × ${fan.messages} messages, ` +
    `delivered ${fan.delivered}/${fan.expected}, ${fan.duplicates} duplicates, ` +
    `latency p50 ${fan.p50.toFixed(1)} ms, p99 ${fan.p99.toFixed(1)} ms`,
)

await baseline.close()
const servers = [...instances, uncached]
for (const server of servers) await server.app.close()
for (const bus of new Set(servers.map((server) => server.events))) await bus.close()
for (const server of servers) await server.redis?.close()
await database.close()
if (failures > 0) {
  console.error(`\n${failures} requests or deliveries failed: the figures above are not valid`)
  process.exit(1)
}
