import { type ChildProcess, fork } from 'node:child_process'
import { once } from 'node:events'
import {
  fanoutResult,
  type Hearing,
  now,
  sendMeasured,
  subscriberUrl,
  untilEveryoneHears,
} from './fanout.js'
import type { WorkerRequest } from './fanout-subscribers.js'
import { type InstanceProcess, startInstanceProcesses } from './processes.js'

/**
 * `make fanout`: SUBSCRIBERS graphql-ws subscribers (20,000) over INSTANCES processes of
 * the compiled service (4) on DATABASE_URL and REDIS_URL, all on one chat, then MESSAGES
 * messages (20) at RATE per second (2): delivered/expected, latency from send to each
 * delivery, and each instance's resident size, idle, at its peak and at the end. The
 * subscribers live in processes of SUBSCRIBERS_PER_PROCESS (10,000) each: a process here
 * may open at most 20,000 files.
 */
const INSTANCES = Number(process.env.INSTANCES ?? 4)
const SUBSCRIBERS = Number(process.env.SUBSCRIBERS ?? 20_000)
const MESSAGES = Number(process.env.MESSAGES ?? 20)
const RATE = Number(process.env.RATE ?? 2)
const SUBSCRIBERS_PER_PROCESS = Number(process.env.SUBSCRIBERS_PER_PROCESS ?? 10_000)
const SAMPLE_EVERY_MS = 500

/** Sends a request to a subscribers' process and waits for its answer. */
async function ask<Answer>(worker: ChildProcess, request: WorkerRequest): Promise<Answer> {
  const answer = once(worker, 'message')
  worker.send(request)
  return (await answer)[0] as Answer
}

async function subscriberProcesses(baseUrls: string[], chatId: string) {
  const urls = Array.from({ length: SUBSCRIBERS }, (_, index) => subscriberUrl(baseUrls, index))
  const workers: ChildProcess[] = []
  for (let start = 0; start < urls.length; start += SUBSCRIBERS_PER_PROCESS) {
    const worker = fork(new URL('./fanout-subscribers.ts', import.meta.url), {
      execArgv: ['--import', 'tsx'],
    })
    workers.push(worker)
    const share = urls.slice(start, start + SUBSCRIBERS_PER_PROCESS)
    await ask(worker, { type: 'subscribe', urls: share, chatId })
  }
  const each = <Answer>(type: 'hearing' | 'latencies' | 'close') =>
    Promise.all(workers.map((worker) => ask<Answer>(worker, { type })))
  return {
    async hearing(): Promise<Hearing> {
      const shares = await each<Hearing>('hearing')
      return {
        ready: shares.reduce((sum, share) => sum + share.ready, 0),
        delivered: shares.reduce((sum, share) => sum + share.delivered, 0),
        duplicates: shares.reduce((sum, share) => sum + share.duplicates, 0),
      }
    },
    latencies: async () => (await each<number[]>('latencies')).flat(),
    close: () => each('close'),
  }
}

/** The largest resident size each instance reached while `work` ran. */
async function peaksDuring<Result>(instances: InstanceProcess[], work: () => Promise<Result>) {
  const peaks = instances.map(() => 0)
  const sampling = setInterval(async () => {
    const sizes = await sizesOf(instances)
    sizes.forEach((size, index) => {
      peaks[index] = Math.max(peaks[index] as number, size)
    })
  }, SAMPLE_EVERY_MS)
  try {
    return { result: await work(), peaks }
  } finally {
    clearInterval(sampling)
  }
}

const sizesOf = (instances: InstanceProcess[]) =>
  Promise.all(instances.map((instance) => instance.residentMiB()))
const mebibytes = (sizes: number[]) => sizes.map((size) => size.toFixed(1)).join(' · ')

async function run(instances: InstanceProcess[]) {
  const baseUrls = instances.map((instance) => instance.url)
  const chatId = `fanout-${Date.now()}`
  const startedAt = now()
  const group = await subscriberProcesses(baseUrls, chatId)
  try {
    await untilEveryoneHears(baseUrls, chatId, SUBSCRIBERS, group.hearing)
    const connectedMs = now() - startedAt
    const spec = { total: SUBSCRIBERS, messages: MESSAGES, ratePerSecond: RATE }
    const hearing = await sendMeasured(baseUrls, chatId, spec, group.hearing)
    return fanoutResult({ ...spec, connectedMs }, hearing, await group.latencies())
  } finally {
    await group.close()
  }
}

const instances = await startInstanceProcesses(INSTANCES)
let failed = false
try {
  const idle = await sizesOf(instances)
  const { result, peaks } = await peaksDuring(instances, () => run(instances))
  const after = await sizesOf(instances)
  failed = result.delivered !== result.expected || result.duplicates > 0
  console.log(
    [
      `fan-out: ${SUBSCRIBERS} subscribers over ${INSTANCES} instances, ${MESSAGES} messages at ${RATE}/s`,
      `delivered ${result.delivered}/${result.expected}, ${result.duplicates} duplicates`,
      `latency p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms`,
      `all subscribed in ${Math.round(result.connectedMs)} ms`,
      `resident MiB per instance: idle ${mebibytes(idle)}; peak ${mebibytes(peaks)}; after ${mebibytes(after)}`,
    ].join('\n'),
  )
} finally {
  await Promise.all(instances.map((instance) => instance.stop()))
}
if (failed) {
  console.error('some deliveries were lost or repeated: the figures above are not valid')
  process.exit(1)
}
