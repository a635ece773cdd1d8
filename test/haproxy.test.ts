import { randomUUID } from 'node:crypto'
import http from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { and, asc, eq, gt } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { messages } from '../src/db/schema.js'
import { type Backend, backends, type TestDatabase } from './helpers/backends.js'
import { haproxyInstalled, NO_ERRORS, startHaproxy } from './helpers/haproxy.js'
import { LEGACY_WS, TRANSPORT_WS } from './helpers/raw-subscription.js'
import { ownRedis, redisUrl } from './helpers/redis.js'
import { resumingSubscriber } from './helpers/resuming-subscriber.js'
import { testEnvironment } from './helpers/server.js'
import { startedProcess, stopProcesses } from './helpers/server-process.js'

/**
 * Four instances as real processes behind HAProxy configured by deploy/haproxy.cfg, over
 * one Postgres database and Redis. Subscribers connect through HAProxy and resume with
 * `after:` whenever their socket closes; senders send through it. Mid-stream one instance
 * gets SIGTERM (it drains: /ready fails until HAProxy takes it out, then it closes) and
 * another SIGKILL. Every subscriber receives every stored message once and in id order,
 * and the SIGTERM'd instance fails no request.
 */
const postgres = backends.find((backend) => backend.name === 'postgres')

const INSTANCES = 4
const SUBSCRIBERS = 40
/** One subscriber in four speaks the legacy subprotocol. */
const LEGACY_EVERY = 4
const SENDERS = 4
const SEND_PAUSE_MS = 20
/** Messages answered before the signals, and after every subscriber resumed. */
const BEFORE_SIGNALS = 150
const AFTER_RESUMING = 150
/** What docs/operations.md tells operators of deploy/haproxy.cfg to set. */
const DRAIN_MS = 5000
const DELIVERY_WAIT_MS = 30_000

const SEND = `mutation ($text: String!, $chatId: ID!) {
  sendMessage(text: $text, author: "haproxy", chatId: $chatId) { id }
}`

interface Outcome {
  /** HTTP status, 0 when the connection failed. */
  status: number
  id?: number
  error?: string
}

async function send(baseUrl: string, text: string, chatId: string): Promise<Outcome> {
  try {
    const response = await fetch(`${baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: SEND, variables: { text, chatId } }),
    })
    const body = await response.text()
    const id = response.status === 200 ? JSON.parse(body).data?.sendMessage?.id : undefined
    return id ? { status: 200, id: Number(id) } : { status: response.status, error: body }
  } catch (error) {
    const { cause, message } = error as Error & { cause?: { code?: string } }
    return { status: 0, error: cause?.code ?? message }
  }
}

type Instance = Awaited<ReturnType<typeof startedProcess>> & { name: string; port: number }

// Outside CI a machine without haproxy skips the suite, saying so in its name.
describe.runIf(postgres && redisUrl && haproxyInstalled)(
  `${INSTANCES} instances behind HAProxy${haproxyInstalled ? '' : ' (skipped: haproxy is not installed)'}`,
  () => {
    let database: TestDatabase
    let instances: Instance[] = []
    let haproxy: Awaited<ReturnType<typeof startHaproxy>>
    // A Redis of the suite's own, which the last test stops.
    let redis: Awaited<ReturnType<typeof ownRedis>>

    beforeAll(async () => {
      database = await (postgres as Backend).open()
      redis = await ownRedis()
      const environment = {
        ...testEnvironment,
        // Each request's line, with the address the service took for the client's.
        LOG_LEVEL: 'info',
        DATABASE_URL: database.url as string,
        REDIS_URL: redis.url,
        REDIS_KEY_PREFIX: database.redisKeyPrefix,
        TRUST_PROXY: 'loopback',
        SHUTDOWN_DRAIN_MS: String(DRAIN_MS),
      }
      const started = await Promise.all(
        Array.from({ length: INSTANCES }, () => startedProcess(environment)),
      )
      instances = started.map((each, index) => ({
        ...each,
        name: `app${index + 1}`,
        port: Number(new URL(each.baseUrl).port),
      }))
      haproxy = await startHaproxy(instances)
    }, 120_000)
    afterAll(async () => {
      try {
        await haproxy?.stop()
        await stopProcesses()
        await redis?.stop()
      } finally {
        await database?.drop()
      }
    }, 60_000)

    it('shows the service the address of the client, not one the client names', async () => {
      const requestId = randomUUID()
      const status = await new Promise((resolve, reject) => {
        const headers = { 'x-forwarded-for': '203.0.113.7', 'x-request-id': requestId }
        // Another loopback address than HAProxy's own, so that the two can be told apart.
        const options = { localAddress: '127.0.0.3', headers }
        http
          .get(`${haproxy.url}/health`, options, (response) => {
            response.resume()
            resolve(response.statusCode)
          })
          .on('error', reject)
      })
      expect(status).toBe(200)
      const line = () =>
        instances
          .flatMap((instance) => instance.lines())
          .filter((text) => text.includes(requestId))
          .map((text) => JSON.parse(text))
          .find((record) => record.msg === 'request completed')
      // Log lines are written in batches, at least every second.
      await expect.poll(line, { timeout: 10_000 }).toBeDefined()
      expect(line().req.remoteAddress).toBe('127.0.0.3')
    })

    it('delivers every message once and in order to every subscriber while one instance is stopped with SIGTERM and another killed', async () => {
      const [drained, killed] = instances as [Instance, Instance]
      const chatId = `haproxy-${Date.now()}`
      const seed = await send(haproxy.url, 'before the subscribers', chatId)
      expect(seed.error).toBeUndefined()
      const subscribers = Array.from({ length: SUBSCRIBERS }, (_, index) =>
        resumingSubscriber(
          haproxy.url,
          index % LEGACY_EVERY === 0 ? LEGACY_WS : TRANSPORT_WS,
          chatId,
          seed.id as number,
        ),
      )
      const outcomes: Outcome[] = []
      let sending = true
      let senders: Promise<void>[] = []
      try {
        // Every socket open (HAProxy counts a session per socket), before any sender's.
        await expect
          .poll(async () => Object.values(await haproxy.sessions()).reduce((a, b) => a + b), {
            timeout: 20_000,
          })
          .toBe(SUBSCRIBERS)
        const subscribersPerInstance = await haproxy.sessions()
        for (const { name } of instances) expect(subscribersPerInstance[name]).toBeGreaterThan(0)

        senders = Array.from({ length: SENDERS }, async (_, sender) => {
          for (let turn = 0; sending; turn += 1) {
            outcomes.push(await send(haproxy.url, `s${sender}-${turn}`, chatId))
            await sleep(SEND_PAUSE_MS)
          }
        })
        const answered = () => outcomes.flatMap((outcome) => outcome.id ?? [])
        await expect
          .poll(() => answered().length, { timeout: 30_000 })
          .toBeGreaterThanOrEqual(BEFORE_SIGNALS)

        const signalledAt = performance.now()
        const downAt = haproxy.downTimes([drained.name, killed.name], signalledAt)
        const drainedExit = new Promise<number | null>((resolve) =>
          drained.child.once('exit', resolve),
        )
        drained.child.kill('SIGTERM')
        killed.child.kill('SIGKILL')
        expect(await drainedExit).toBe(0)
        const exitedMs = Math.round(performance.now() - signalledAt)

        // Every subscriber gets what was answered after the drained instance exited.
        const newestAtExit = Math.max(...answered())
        await expect
          .poll(() => subscribers.every((each) => (each.ids.at(-1) ?? 0) > newestAtExit), {
            timeout: DELIVERY_WAIT_MS,
          })
          .toBe(true)
        const answeredWhenResumed = answered().length
        await expect
          .poll(() => answered().length, { timeout: 30_000 })
          .toBeGreaterThanOrEqual(answeredWhenResumed + AFTER_RESUMING)
        sending = false
        await Promise.all(senders)

        const stored = await storedIds(database, chatId, seed.id as number)
        expect(stored).toEqual(expect.arrayContaining(answered()))
        await expect
          .poll(() => subscribers.filter((each) => each.ids.length < stored.length).length, {
            timeout: DELIVERY_WAIT_MS,
          })
          .toBe(0)
        for (const subscriber of subscribers) {
          expect(subscriber.ids).toEqual(stored)
          expect(subscriber.errors).toEqual([])
        }

        // HAProxy took the drained instance out by its /ready, whose 503 says it is shutting
        // down (or late, on a loaded machine: at layer 7 either way), so before it closed:
        // once closed, its checks would have met a refused connection, as the killed one's did.
        const downMs = await downAt
        const downs = haproxy.healthChanges().filter((change) => change.state === 'DOWN')
        const reasons = (name: string) =>
          downs
            .filter((change) => change.server === name)
            .map(({ reason, code }) => ({ reason, code }))
        expect(reasons(drained.name)).toEqual([
          expect.objectContaining({
            reason: expect.stringMatching(/^Layer7 (invalid response|timeout)$/),
          }),
        ])
        expect(reasons(killed.name)).toEqual([
          { reason: 'Layer4 connection problem', code: undefined },
        ])

        // Nothing failed on the drained instance, or on the two others: HAProxy's log has a
        // line for every answered request, and its counters count what it dropped
        // unanswered, on the instance it had sent it to. The killed instance's failures
        // are the requests it held when it died: a 502, or a kept-alive connection closed
        // without an answer (`http-reuse safe`, so that a client may retry).
        const failedRequests = haproxy
          .requests()
          .filter((request) => request.path === '/graphql' && request.method === 'POST')
          .filter((request) => request.status !== 200)
        expect(failedRequests.filter((request) => request.server !== killed.name)).toEqual([])
        const errors = await haproxy.errors()
        for (const { name } of instances.filter((each) => each !== killed)) {
          expect({ name, ...errors[name] }).toEqual({ name, ...NO_ERRORS })
        }
        const failures = outcomes.filter((outcome) => outcome.id === undefined)
        for (const failure of failures) expect([0, 502]).toContain(failure.status)

        const reconnects = subscribers.flatMap((each) => each.reconnects)
        const resumedMs = (code: number) =>
          spread(
            reconnects
              .flatMap((each) => (each.code === code && each.resumedAt) || [])
              .map((resumedAt) => resumedAt - signalledAt),
          )
        console.info(
          [
            `haproxy: ${INSTANCES} instances; subscribers per instance ${JSON.stringify(subscribersPerInstance)} (${subscribers.filter((each) => each.protocol === LEGACY_WS).length} of ${SUBSCRIBERS} on the legacy subprotocol)`,
            `${stored.length} messages stored, ${answered().length} answered of ${outcomes.length} sent by ${SENDERS} senders, each delivered once and in order to every subscriber`,
            `SIGTERM ${drained.name} and SIGKILL ${killed.name} together: HAProxy saw them DOWN ${JSON.stringify(downMs)} ms after (${drained.name}: ${JSON.stringify(reasons(drained.name))}), ${drained.name} exited 0 after ${exitedMs} ms (drain ${DRAIN_MS} ms)`,
            `reconnects: ${tally(reconnects.map((each) => each.code))} by close code, ${subscribers.reduce((sum, each) => sum + each.failedConnects, 0)} failed connects; resumed delivery after the signals (min/median/max ms): closed with 1001 ${resumedMs(1001)}, cut (1006) ${resumedMs(1006)}`,
            `failed requests: ${failures.length} (${tally(failures.map((each) => `${each.status} ${each.status === 0 ? each.error : ''}`.trim()))}), HAProxy's errors by server ${JSON.stringify(errors)}; ${haproxy.requests().filter((each) => each.retries.startsWith('+')).length} requests redispatched after a refused connection`,
          ].join('; '),
        )
      } finally {
        sending = false
        await Promise.all(senders)
        await Promise.all(subscribers.map((each) => each.stop()))
      }
    }, 180_000)

    it('keeps the instances in the pool while Redis is away, and serves through them', async () => {
      const live = instances.filter(({ child }) => child.exitCode === null && !child.signalCode)
      expect(live.length).toBeGreaterThan(0)
      const chatId = `haproxy-redis-${Date.now()}`
      await redis.kill()
      try {
        for (const { baseUrl } of live) {
          await expect.poll(async () => (await fetch(`${baseUrl}/ready`)).status).toBe(503)
        }
        // A check passed on the 503 that names Redis: HAProxy keeps them in.
        const checked = async () => {
          const checks = await haproxy.checks()
          return live.map(({ name }) => checks[name])
        }
        const passedOnRedis = { status: 'UP', check: 'L7OK', code: 503 }
        await expect.poll(checked, { timeout: 10_000 }).toEqual(live.map(() => passedOnRedis))
        for (let request = 0; request < 2 * live.length; request += 1) {
          expect((await fetch(`${haproxy.url}/products`)).status).toBe(200)
          expect((await send(haproxy.url, `while Redis is away ${request}`, chatId)).status).toBe(
            200,
          )
        }
        expect(await checked()).toEqual(live.map(() => passedOnRedis))
      } finally {
        await redis.start()
      }
    })
  },
)

async function storedIds(database: TestDatabase, chatId: string, after: number) {
  const rows = await database.database.db
    .select({ id: messages.id })
    .from(messages)
    .where(and(eq(messages.chatId, chatId), gt(messages.id, after)))
    .orderBy(asc(messages.id))
  return rows.map((row) => row.id)
}

const tally = (values: (string | number)[]) =>
  JSON.stringify(
    values.reduce<Record<string, number>>((counts, value) => {
      counts[value] = (counts[value] ?? 0) + 1
      return counts
    }, {}),
  )

function spread(values: number[]) {
  if (values.length === 0) return '-'
  const sorted = values.map(Math.round).sort((a, b) => a - b)
  return `${sorted[0]}/${sorted[Math.floor(sorted.length / 2)]}/${sorted.at(-1)}`
}
