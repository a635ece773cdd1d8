import type { AddressInfo } from 'node:net'
import { loadConfig } from '../src/config.js'

// One process of `BENCH_TRACING=1 make bench` (see tracing-cost.ts): (c) and (g) of
// run.ts on one instance, with tracing on when OTEL_EXPORTER_OTLP_ENDPOINT is set, as
// server.ts runs it: the SDK started before the service's modules are loaded. Prints the
// two measurements as one JSON line.
const environment = {
  NODE_ENV: 'production',
  LOG_LEVEL: 'silent',
  JWT_SECRET: 'bench-secret-bench-secret-bench-secret',
  RATE_LIMIT_MAX: '0',
  ...(process.env.OTEL_EXPORTER_OTLP_ENDPOINT && {
    OTEL_EXPORTER_OTLP_ENDPOINT: process.env.OTEL_EXPORTER_OTLP_ENDPOINT,
  }),
}
const config = loadConfig(environment)
const tracing = config.tracing
  ? (await import('../src/platform/telemetry/sdk.js')).startTracing(config.tracing)
  : undefined
const [{ sql }, { pino }, { buildApp }, { createEventBus }, seed, { measure }] = await Promise.all([
  import('drizzle-orm'),
  import('pino'),
  import('../src/app.js'),
  import('../src/platform/infrastructure/events.js'),
  import('./seed.js'),
  import('./measure.js'),
])

const SIZE = Number((process.env.SCALES ?? '100000').split(',')[0])
const log = pino({ level: 'silent' })
const database = await seed.openBenchDatabase(tracing)
await database.db.execute(sql`truncate products, messages, outbox restart identity cascade`)
await seed.seedMessages(database.db, 1000)
await seed.seedProducts(database.db, SIZE)
const events = createEventBus({ log, tracing })
const app = await buildApp({ database, events, loggerInstance: log, tracing }, config)
await app.listen({ port: 0, host: '127.0.0.1' })
const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`

const c = await measure(url, {
  name: '(c)',
  request: { path: `/products/${SIZE / 2}` },
  status: 200,
})
const g = await measure(url, {
  name: '(g)',
  request: {
    path: '/graphql',
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      query: 'mutation { sendMessage(text: "bench", author: "bench") { id createdAt } }',
    }),
  },
  status: 200,
})
console.log(JSON.stringify({ c, g }))
await app.close()
await events.close()
await database.close()
await tracing?.shutdown()
