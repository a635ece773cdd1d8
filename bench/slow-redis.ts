import { spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { delayingRelay } from '../test/helpers/tcp-relay.js'

/**
 * The outside probe's slow-Redis case, for bench/MEASUREMENTS.md: one instance on an
 * embedded database, Redis (REDIS_URL, default the local one) behind a relay that holds
 * every packet 0, 250 and then 500 ms each way. Prints, per delay, GET /products p50 and
 * p99 over 50 reads in a row, the slowest of 30 in parallel, sendMessage's p50 and /ready.
 *   node --import tsx bench/slow-redis.ts
 */
const PORT = 3998
const relay = await delayingRelay(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')
const server = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
  env: {
    ...process.env,
    PORT: String(PORT),
    DATA_DIR: mkdtempSync(join(tmpdir(), 'slow-redis-')),
    REDIS_URL: relay.url,
    REDIS_KEY_PREFIX: `slow-redis-${Date.now()}:`,
    LOG_LEVEL: 'error',
  },
  stdio: ['ignore', 'ignore', 'inherit'],
})
const base = `http://127.0.0.1:${PORT}`

async function timed(path: string, init?: RequestInit): Promise<number> {
  const started = performance.now()
  await (await fetch(`${base}${path}`, init)).arrayBuffer()
  return performance.now() - started
}
const percentile = (values: number[], p: number) =>
  values.sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))] ?? 0
const send = {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    query: 'mutation { sendMessage(text: "x", author: "a", chatId: "slow-redis") { id } }',
  }),
}

try {
  while (
    !(await fetch(`${base}/health`).then(
      (r) => r.ok,
      () => false,
    ))
  )
    await sleep(200)
  for (const delay of [0, 250, 500]) {
    relay.delay(delay)
    await sleep(1500)
    const reads: number[] = []
    for (let read = 0; read < 50; read++) reads.push(await timed('/products'))
    const parallel = await Promise.all(Array.from({ length: 30 }, () => timed('/products')))
    const sends: number[] = []
    for (let sent = 0; sent < 20; sent++) sends.push(await timed('/graphql', send))
    const ready = await (await fetch(`${base}/ready`)).json()
    console.log(
      JSON.stringify({
        oneWayDelayMs: delay,
        productsP50: percentile(reads, 0.5).toFixed(1),
        productsP99: percentile(reads, 0.99).toFixed(1),
        slowestOf30Parallel: Math.max(...parallel).toFixed(1),
        sendMessageP50: percentile(sends, 0.5).toFixed(1),
        ready,
      }),
    )
  }
} finally {
  server.kill('SIGTERM')
  await relay.close()
}
