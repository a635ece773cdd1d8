import { type Config, ConfigError, loadConfig } from './config.js'
import type { Tracing } from './platform/telemetry/tracing.js'

const LOG_BATCH_BYTES = 4096
const LOG_FLUSH_MS = 1000
/** What the close after the drain may take before close-with-grace kills the process. */
const CLOSE_GRACE_MS = 10_000

// The only file that reads process.env and opens sockets.
let config: ReturnType<typeof loadConfig>
try {
  config = loadConfig(process.env)
} catch (error) {
  if (!(error instanceof ConfigError)) throw error
  console.error(error.message)
  process.exit(1)
}

// Tracing starts before what it instruments (http, ioredis) is loaded, so the rest comes
// by dynamic import; with tracing off, nothing of OpenTelemetry is loaded at all.
const tracing = config.tracing
  ? (await import('./platform/telemetry/sdk.js')).startTracing(config.tracing)
  : undefined
const [
  { default: closeWithGrace },
  { destination, pino },
  { default: pretty },
  { buildApp },
  { openDatabase },
  { createEventBus },
  { redisFromConfig },
  { createDrain },
] = await Promise.all([
  import('close-with-grace'),
  import('pino'),
  import('pino-pretty'),
  import('./app.js'),
  import('./db/client.js'),
  import('./platform/infrastructure/events.js'),
  import('./platform/infrastructure/redis.js'),
  import('./platform/infrastructure/drain.js'),
])

const database = await openDatabase({ ...config, statementSpans: tracing })
await database.migrate()
const logger = createLogger(config, tracing)
const redis = redisFromConfig(config, logger)
const events = createEventBus({ redis, log: logger, tracing })
const drain = createDrain()
const app = await buildApp(
  { database, events, redis, loggerInstance: logger, tracing, drain },
  config,
)
for (const warning of config.warnings) app.log.warn(warning)

// On a signal, first the drain (SHUTDOWN_DRAIN_MS: /ready fails, all else is served, so
// the load balancer takes this instance out), then the close. Every step of the close is
// bounded (sockets 1 s, the outbox 3 s, Redis 1 s, the pool 2 s), so the whole stays well
// inside the grace delay and the cleanup always runs to its end. After an error there is
// no drain: the process may be broken.
closeWithGrace({ delay: config.shutdownDrainMs + CLOSE_GRACE_MS }, async ({ err, signal }) => {
  const started = performance.now()
  if (err) app.log.error({ err }, 'shutting down after an error')
  else {
    const drainMs = config.shutdownDrainMs
    app.log.info({ signal, drainMs }, 'shutting down: draining, then finishing what is in flight')
    await drain.drainFor(drainMs)
  }
  await app.close()
  await events.close()
  await redis?.close()
  await database.close()
  await tracing?.shutdown()
  app.log.info({ ms: Math.round(performance.now() - started) }, 'shut down')
})

const address = await app.listen({ port: config.port, host: config.host })
app.log.info(
  [
    `REST API at ${address} (docs: ${address}/docs)`,
    `GraphQL at ${address}/graphql${config.development ? ` (GraphiQL: ${address}/graphiql)` : ''}`,
    `database: ${database.kind === 'pglite' ? `embedded PGlite in ${config.dataDir}` : `Postgres${database.replica ? ' and a read replica' : ''}`}`,
    `pub/sub: ${events.kind === 'redis' ? 'Redis' : 'in-process'}`,
  ].join(', '),
)

/**
 * JSON lines for collectors, written in batches of LOG_BATCH_BYTES, at least every
 * LOG_FLUSH_MS so that a quiet server's lines are not held back, and the rest at exit.
 * A write per line was a syscall per request. Each batch is written synchronously, as
 * pino's destination is by default: the asynchronous one hands it to libuv's thread pool
 * and converts it to bytes twice, which costs more CPU per line than writing it here,
 * enough to show in an invalid POST's. The price is that a log reader that stops
 * reading blocks the server, as it would under pino's defaults. For a person,
 * pino-pretty in this thread (not a transport's worker), unbatched: development wants
 * every line, a crash's last one included.
 */
function createLogger({ logLevel, logFormat }: Config, tracing: Tracing | undefined) {
  // The ids of the active span on every line, when tracing is on.
  const options = { level: logLevel, ...(tracing && { mixin: tracing.logFields }) }
  if (logFormat === 'json') {
    const batched = { minLength: LOG_BATCH_BYTES, periodicFlush: LOG_FLUSH_MS }
    const stream = destination({ sync: true, ...batched })
    // pino flushes an asynchronous destination at exit, and takes a synchronous one to
    // hold nothing: this one holds up to a batch.
    process.on('exit', () => stream.flushSync())
    return pino(options, stream)
  }
  const prettyOptions = { ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss.l', sync: true }
  return pino(options, pretty(prettyOptions))
}
