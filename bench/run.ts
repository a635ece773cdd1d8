import type { AddressInfo } from 'node:net'
import autocannon from 'autocannon'
import { sql } from 'drizzle-orm'
import Fastify from 'fastify'
import { pino } from 'pino'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { createEventBus } from '../src/platform/events.js'
import { connectRedis } from '../src/platform/redis.js'
import { fanout } from './fanout.js'
import { openBenchDatabase, seedProducts } from './seed.js'

// `make bench`: req/s and p99 of the main operations on 100k seeded products (PRODUCTS to
// change), against a bare Fastify baseline in the same run; then subscription fan-out
// over two instances (through Redis when REDIS_URL is set). DATABASE_URL for Postgres.
const PRODUCTS = Number(process.env.PRODUCTS ?? 100_000)
const DURATION = Number(process.env.DURATION ?? 10)
const ADMIN = { email: 'bench@example.com', password: 'bench-password-1' }

const log = pino({ level: 'silent' })
const database = await openBenchDatabase()
await database.db.execute(sql`truncate products, messages restart identity`)
await seedProducts(database.db, PRODUCTS)

const config = loadConfig({
  NODE_ENV: 'production',
  LOG_LEVEL: 'silent',
  JWT_SECRET: 'bench-secret-bench-secret-bench-secret',
  ADMIN_EMAIL: ADMIN.email,
  ADMIN_PASSWORD: ADMIN.password,
  RATE_LIMIT_MAX: '0',
  // Every subscriber of the fan-out connects from this one address.
  WS_SOCKETS_PER_CALLER: '0',
  ...(process.env.REDIS_URL && { REDIS_URL: process.env.REDIS_URL }),
})
// Without Redis the two instances share one in-process bus, as one process can.
const sharedBus = config.redisUrl ? undefined : createEventBus({ log })
const instances = await Promise.all(
  [0, 1].map(async () => {
    const redis = config.redisUrl
      ? connectRedis({ url: config.redisUrl, keyPrefix: config.redisKeyPrefix, log })
      : undefined
    const events = sharedBus ?? createEventBus({ redis, log })
    const app = await buildApp({ database, events, redis, loggerInstance: log }, config)
    await app.listen({ port: 0, host: '127.0.0.1' })
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
    return { app, events, redis, url }
  }),
)
const [first] = instances as [(typeof instances)[number]]

const baseline = Fastify()
baseline.get('/products', async () => ({ data: [], pagination: { page: 1, limit: 10, total: 0 } }))
await baseline.listen({ port: 0, host: '127.0.0.1' })
const baselineUrl = `http://127.0.0.1:${(baseline.server.address() as AddressInfo).port}`

const login = await fetch(`${first.url}/auth/login`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(ADMIN),
})
const { accessToken } = ((await login.json()) as { data: { accessToken: string } }).data
const json = { 'content-type': 'application/json' }
const gql = (query: string) => JSON.stringify({ query })

const scenarios: { name: string; options: autocannon.Options }[] = [
  { name: 'bare Fastify baseline', options: { url: `${baselineUrl}/products` } },
  { name: 'GET /products', options: { url: `${first.url}/products` } },
  {
    name: 'GET /products filtered',
    options: {
      url: `${first.url}/products?category=category-10&minPrice=100&maxPrice=500&search=oak`,
    },
  },
  { name: 'GET /products/{id}', options: { url: `${first.url}/products/${PRODUCTS / 2}` } },
  {
    name: 'POST /products',
    options: {
      url: `${first.url}/products`,
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${accessToken}` },
      body: JSON.stringify({ name: 'Bench lamp', price: 9.99, category: 'bench' }),
    },
  },
  {
    name: 'GraphQL messages',
    options: {
      url: `${first.url}/graphql`,
      method: 'POST',
      headers: json,
      body: gql('{ messages(limit: 20) { id text } }'),
    },
  },
  {
    name: 'GraphQL sendMessage',
    options: {
      url: `${first.url}/graphql`,
      method: 'POST',
      headers: json,
      body: gql('mutation { sendMessage(text: "bench", author: "bench") { id } }'),
    },
  },
]

console.log(
  `${database.kind}, ${PRODUCTS} products, pub/sub ${first.events.kind}, ${DURATION} s each, 10 connections\n`,
)
console.log('| scenario | req/s | p99 ms | errors |')
console.log('|---|---:|---:|---:|')
for (const { name, options } of scenarios) {
  const result = await autocannon({ connections: 10, duration: DURATION, ...options })
  const errors = result.errors + result.non2xx
  console.log(
    `| ${name} | ${Math.round(result.requests.average)} | ${result.latency.p99} | ${errors} |`,
  )
}

const fan = await fanout(
  instances.map((instance) => instance.url),
  Number(process.env.SUBSCRIBERS ?? 200),
  Number(process.env.MESSAGES ?? 50),
  async (count) => {
    const buses = new Set(instances.map((instance) => instance.events))
    while ([...buses].reduce((sum, bus) => sum + bus.activeSubscriptions(), 0) < count) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  },
)
console.log(
  `\nfan-out over 2 instances (${first.events.kind}): ${fan.subscribers} subscribers × ${fan.messages} messages, ` +
    `delivered ${fan.delivered}/${fan.expected}, latency p50 ${fan.p50.toFixed(1)} ms, p99 ${fan.p99.toFixed(1)} ms`,
)

await baseline.close()
for (const instance of instances) await instance.app.close()
for (const bus of new Set(instances.map((instance) => instance.events))) await bus.close()
for (const instance of instances) await instance.redis?.close()
await database.close()
