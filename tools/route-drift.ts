import { readFileSync } from 'node:fs'
import { pino } from 'pino'
import { parse } from 'yaml'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/client.js'
import { specificationPath } from '../src/http/openapi-routes.js'
import { createEventBus } from '../src/platform/infrastructure/events.js'

/**
 * `make check`: the routes the server registers against the operations of openapi.yaml,
 * both ways. Exits 1 on any difference.
 */

// Served beside the REST API on purpose, and described elsewhere.
const NOT_REST = [
  /^\/graphql$/, // schema.graphql
  /^\/graphiql/, // GraphiQL, the GraphQL IDE
  /^\/docs/, // Swagger UI, which serves openapi.yaml itself
]
// Fastify answers HEAD for every GET; OpenAPI leaves HEAD implied.
const IMPLIED = new Set(['HEAD'])

const spec = parse(readFileSync(specificationPath, 'utf8')) as { paths: Record<string, object> }
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']
const documented = new Set(
  Object.entries(spec.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((key) => METHODS.includes(key))
      .map((method) => `${method.toUpperCase()} ${path.replace(/\{([^}]+)\}/g, ':$1')}`),
  ),
)

const database = await openDatabase(loadConfig({ DATA_DIR: 'memory://' }))
await database.migrate()
const log = pino({ level: 'silent' })
const events = createEventBus({ log })
const app = await buildApp(
  { database, events, loggerInstance: log },
  loadConfig({ NODE_ENV: 'development', LOG_LEVEL: 'silent', JWT_SECRET: 'x'.repeat(32) }),
)
await app.ready()
const registered = new Set(
  app
    .registeredRoutes()
    .filter(
      ({ method, url }) => !IMPLIED.has(method) && !NOT_REST.some((pattern) => pattern.test(url)),
    )
    .map(({ method, url }) => `${method} ${url}`),
)
await app.close()
await events.close()
await database.close()

const unserved = [...documented].filter((route) => !registered.has(route))
const undocumented = [...registered].filter((route) => !documented.has(route))
for (const route of unserved) console.error(`in openapi.yaml, not served: ${route}`)
for (const route of undocumented) console.error(`served, not in openapi.yaml: ${route}`)
if (unserved.length + undocumented.length > 0) process.exit(1)
console.log(`routes match openapi.yaml: ${documented.size} operations`)
