import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Measurement } from './measure.js'

type Run = { c: Measurement; g: Measurement }
const ROUNDS = Number(process.env.ROUNDS ?? 2)

/**
 * `BENCH_TRACING=1 make bench`: what tracing costs on (c) and (g). Each run is a process of
 * its own (traced-operations.ts), since tracing is started before the service loads,
 * alternating off and on, ROUNDS times; with it on, spans go as OTLP/HTTP protobuf to a
 * sink in this process that takes them and answers 200, as a collector would.
 */
export async function tracingCost() {
  const sink = createServer((request, response) => {
    request.resume().on('end', () => response.writeHead(200).end())
  })
  sink.listen(0, '127.0.0.1')
  await once(sink, 'listening')
  const endpoint = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`
  const runs: { tracing: 'off' | 'on'; run: Run }[] = []
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const tracing of ['off', 'on'] as const) {
      runs.push({ tracing, run: await measuredRun(tracing === 'on' ? endpoint : undefined) })
    }
  }
  sink.close()
  const cell = ({ requestsPerSecond, p99Ms, failures }: Measurement) =>
    `${requestsPerSecond} (p99 ${p99Ms} ms${failures ? `, ${failures} failed` : ''})`
  const cells = (tracing: string, key: keyof Run) =>
    runs
      .filter((each) => each.tracing === tracing)
      .map((each) => cell(each.run[key]))
      .join(' · ')
  const mean = (tracing: string, key: keyof Run) => {
    const rates = runs.filter((each) => each.tracing === tracing).map((each) => each.run[key])
    return rates.reduce((sum, each) => sum + each.requestsPerSecond, 0) / rates.length
  }
  console.log('| workload | tracing off | tracing on | on / off |')
  console.log('| --- | ---: | ---: | ---: |')
  for (const [key, name] of [
    ['c', '(c) GET /products/{id}'],
    ['g', '(g) GraphQL sendMessage'],
  ] as const) {
    const ratio = (mean('on', key) / mean('off', key)).toFixed(2)
    console.log(`| ${name} | ${cells('off', key)} | ${cells('on', key)} | ${ratio}× |`)
  }
  const failed = runs.some(({ run }) => run.c.failures + run.g.failures > 0)
  return failed ? 1 : 0
}

async function measuredRun(endpoint: string | undefined): Promise<Run> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/traced-operations.ts'], {
    env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint ?? '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk
  })
  const [code] = await once(child, 'exit')
  if (code !== 0) throw new Error(`bench/traced-operations.ts exited with ${code}`)
  return JSON.parse(output.trim().split('\n').at(-1) as string) as Run
}
