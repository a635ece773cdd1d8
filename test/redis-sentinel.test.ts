import type { Client } from 'graphql-ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Backend } from './helpers/backends.js'
import { backends } from './helpers/backends.js'
import { graphql, subscriptionsActive, wsClient } from './helpers/graphql.js'
import { redisUrl, sentinelRedis } from './helpers/redis.js'
import { freshAccount, startServer, type TestServer } from './helpers/server.js'

/**
 * Redis through Sentinel (REDIS_SENTINELS), its primary killed with SIGKILL under a
 * steady sendMessage load, with subscribers on two instances over one Postgres: the
 * Sentinels promote the replica, every connection of both instances finds it, and
 * nothing that was answered is lost, while rate limits and presence work again.
 */
const postgres = backends.find((backend) => backend.name === 'postgres')

const SEND = `mutation ($text: String!, $chatId: ID!) {
  sendMessage(text: $text, author: "load", chatId: $chatId) { id }
}`
const LOAD_INTERVAL_MS = 50
/** A bound on the load whatever happens: 50 s of it. */
const LOAD_MAX_SENDS = 1000
const LOAD_ACCOUNTS = 10
const SUBSCRIBERS_PER_INSTANCE = 2
const RATE_LIMIT_MAX = 200
const CLOSE_WAIT_MS = 20_000

describe.runIf(postgres && redisUrl)('Redis through Sentinel, its primary killed', () => {
  let redis: Awaited<ReturnType<typeof sentinelRedis>>
  let instances: TestServer[] = []
  const chatId = `sentinel-${Date.now()}`

  beforeAll(async () => {
    redis = await sentinelRedis()
    const environment = {
      REDIS_SENTINELS: redis.sentinels,
      REDIS_SENTINEL_NAME: redis.name,
      RATE_LIMIT_MAX: String(RATE_LIMIT_MAX),
      RATE_LIMIT_WINDOW: '600000',
      PRESENCE_TIMEOUT_MS: '2000',
    }
    const first = await startServer(postgres as Backend, environment)
    const second = await startServer(postgres as Backend, environment, {
      testDatabase: first.testDatabase,
    })
    instances = [first, second]
  }, 90_000)
  afterAll(async () => {
    try {
      // The first instance owns the database: it closes last. An instance that cannot
      // close (one that never found Redis again) is given up on, so the engines below
      // are stopped within the hook's time whatever failed.
      const closed = (async () => {
        for (const instance of instances.toReversed()) await instance.close()
      })()
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS))])
    } finally {
      await redis?.stop()
    }
  })

  it('loses no answered message, and rate limits and presence resume', async () => {
    const [first, second] = instances as [TestServer, TestServer]
    const sockets: Client[] = []
    const socket = (server: TestServer, token?: string) => {
      const client = wsClient(server.baseUrl, token ? { authToken: token } : undefined)
      sockets.push(client)
      return client
    }
    try {
      const subscribers = instances.flatMap((instance) =>
        Array.from({ length: SUBSCRIBERS_PER_INSTANCE }, () =>
          timedSubscriber(socket(instance), chatId),
        ),
      )
      const watcher = statusWatcher(socket(second, (await freshAccount(first)).accessToken))
      for (const instance of [first, second]) {
        await subscriptionsActive(
          instance.events,
          SUBSCRIBERS_PER_INSTANCE + Number(instance === second),
        )
      }
      const before = await freshAccount(first)
      socket(first, before.accessToken)
      await watcher.online(before.account.id)
      const limited = await spentBudget(first, second)

      const tokens = await Promise.all(
        Array.from({ length: LOAD_ACCOUNTS }, async () => (await freshAccount(first)).accessToken),
      )
      const load = steadyLoad(instances, chatId, tokens)
      try {
        await expect
          .poll(() => load.answered().filter(deliveredTo(subscribers)).length, { timeout: 10_000 })
          .toBeGreaterThanOrEqual(20)
        expect(await redis.replicated()).toBe(1)

        const killedAt = performance.now()
        await redis.killPrimary()
        const milestones = await msUntil(killedAt, {
          promoted: async () => (await redis.primaryNamed()) !== redis.primaryPort,
          // Up again since the kill: both connections of both instances dropped and came back.
          reconnected: () =>
            instances.every(
              (each) => (each.events.upFor() ?? Infinity) < performance.now() - killedAt,
            ),
          ready: async () => (await Promise.all(instances.map(readyStatus))).every(ok),
          everySubscriber: () =>
            subscribers.every((each) => firstArrivalSentAfter([each], load, killedAt)),
        })
        const firstDeliveredMs = Math.round(
          (firstArrivalSentAfter(subscribers, load, killedAt) as number) - killedAt,
        )
        // A little load on the promoted primary, then the rest is waited for.
        await new Promise((resolve) => setTimeout(resolve, 2000))
        await load.stop()

        const answered = load.answered()
        await expect
          .poll(() => answered.filter(deliveredTo(subscribers)).length, { timeout: 30_000 })
          .toBe(answered.length)
        for (const subscriber of subscribers) expect(subscriber.repeats).toEqual([])
        const outcomes = load.outcomes
        expect(outcomes.filter((outcome) => outcome.status === 0)).toEqual([])
        console.info(
          [
            `sentinel failover (SIGKILL of the primary): first event delivered again ${firstDeliveredMs} ms after the kill`,
            `ms after the kill until ${JSON.stringify(milestones)}`,
            `${answered.length}/${outcomes.length} sendMessage answered with an id, outcomes ${tally(outcomes)}`,
            `all ${answered.length} answered delivered to all ${subscribers.length} subscribers`,
          ].join('; '),
        )
      } finally {
        await load.stop()
      }

      await expectBudgetsCounted(instances, limited)

      const after = await freshAccount(first)
      socket(first, after.accessToken)
      await watcher.online(after.account.id)

      const { accessToken: admin } = await freshAccount(first, 'admin')
      for (const instance of [first, second]) {
        expect((await instance.api.get('/metrics', { token: admin })).status).toBe(200)
      }
    } finally {
      await Promise.all(sockets.map((client) => client.dispose()))
    }
  }, 110_000)
})

/** A subscriber of the chat that notes when each text first arrived, and any repeat. */
function timedSubscriber(client: Client, chatId: string) {
  const arrivals = new Map<string, number>()
  const repeats: string[] = []
  client.subscribe<{ messageAdded: { text: string } }>(
    { query: `subscription { messageAdded(chatId: "${chatId}") { text } }` },
    {
      next: ({ data }) => {
        const text = data?.messageAdded.text as string
        if (arrivals.has(text)) repeats.push(text)
        else arrivals.set(text, performance.now())
      },
      error: () => {},
      complete: () => {},
    },
  )
  return { arrivals, repeats }
}
type TimedSubscriber = ReturnType<typeof timedSubscriber>

/** userStatusChanged as one user sees it. */
function statusWatcher(client: Client) {
  const online = new Set<string>()
  client.subscribe<{ userStatusChanged: { userId: string; online: boolean } }>(
    { query: 'subscription { userStatusChanged { userId online } }' },
    {
      next: ({ data }) => {
        if (data?.userStatusChanged.online) online.add(data.userStatusChanged.userId)
      },
      error: () => {},
      complete: () => {},
    },
  )
  return {
    online: (userId: number) =>
      expect.poll(() => online.has(String(userId)), { timeout: 10_000 }).toBe(true),
  }
}

/**
 * A token whose rate-limit budget is spent, over both instances: the next request is
 * refused with 429 wherever it goes, for as long as the budgets are counted in Redis.
 */
async function spentBudget(...instances: TestServer[]) {
  const { accessToken } = await freshAccount(instances[0] as TestServer)
  for (let request = 0; request < RATE_LIMIT_MAX; request += 1) {
    const instance = instances[request % instances.length] as TestServer
    expect((await instance.api.get('/products', { token: accessToken })).status).toBe(200)
  }
  expect((await instances[0]?.api.get('/products', { token: accessToken }))?.status).toBe(429)
  return accessToken
}

/**
 * The budgets are counted in Redis again, where they stood: the spent one is still
 * spent on both instances, and a fresh one is drawn on by each request, wherever it goes.
 */
async function expectBudgetsCounted(instances: TestServer[], spent: string) {
  for (const instance of instances) {
    expect((await instance.api.get('/products', { token: spent })).status).toBe(429)
  }
  const { accessToken: fresh } = await freshAccount(instances[0] as TestServer)
  const remaining = []
  for (const instance of instances) {
    const response = await instance.api.get('/products', { token: fresh })
    remaining.push(response.headers.get('ratelimit-remaining'))
  }
  expect(remaining).toEqual([String(RATE_LIMIT_MAX - 1), String(RATE_LIMIT_MAX - 2)])
}

interface Outcome {
  text: string
  /** The HTTP status; 0 when no answer came. */
  status: number
  id?: string
  code?: string
}

/**
 * One sendMessage every LOAD_INTERVAL_MS, round the instances and the load's accounts,
 * none waiting for the one before: a request that hangs shows as such, and holds up
 * nothing. It stops by itself after LOAD_MAX_SENDS.
 */
function steadyLoad(instances: TestServer[], chatId: string, tokens: string[]) {
  const outcomes: Outcome[] = []
  const sentAt = new Map<string, number>()
  const pending = new Set<Promise<void>>()
  let sent = 0
  const sendOne = () => {
    if (sent >= LOAD_MAX_SENDS) return clearInterval(timer)
    const index = sent++
    const text = `m${index}`
    const at = performance.now()
    sentAt.set(text, at)
    const instance = instances[index % instances.length] as TestServer
    const request = graphql(instance.baseUrl, SEND, { text, chatId }, tokens[index % tokens.length])
      .then(
        ({ status, body }) =>
          outcomes.push({
            text,
            status,
            id: body.data?.sendMessage?.id,
            code: body.errors?.[0]?.extensions?.code,
          }),
        (error: Error) => outcomes.push({ text, status: 0, code: error.message }),
      )
      .then(() => {
        pending.delete(request)
      })
    pending.add(request)
  }
  const timer = setInterval(sendOne, LOAD_INTERVAL_MS)
  return {
    outcomes,
    answered: () => outcomes.filter((outcome) => outcome.id !== undefined),
    sentAt: (text: string) => sentAt.get(text),
    async stop() {
      clearInterval(timer)
      await Promise.all(pending)
    },
  }
}
type SteadyLoad = ReturnType<typeof steadyLoad>

const deliveredTo = (subscribers: TimedSubscriber[]) => (outcome: Outcome) =>
  subscribers.every((subscriber) => subscriber.arrivals.has(outcome.text))

/** The earliest arrival, at any subscriber, of a message sent after `since`. */
function firstArrivalSentAfter(subscribers: TimedSubscriber[], load: SteadyLoad, since: number) {
  const arrivals = subscribers.flatMap((subscriber) =>
    [...subscriber.arrivals].filter(([text]) => (load.sentAt(text) ?? 0) > since),
  )
  return arrivals.length === 0 ? undefined : Math.min(...arrivals.map(([, at]) => at))
}

const readyStatus = async (instance: TestServer) => (await instance.api.get('/ready')).status
const ok = (status: number) => status === 200

/**
 * Polls every condition at once, every 20 ms, for 40 s at most: the ms from `since` at
 * which each first held. One that never does fails the test.
 */
async function msUntil(
  since: number,
  conditions: Record<string, () => unknown>,
): Promise<Record<string, number>> {
  const reached = await Promise.all(
    Object.entries(conditions).map(async ([name, holds]) => {
      await expect
        .poll(async () => Boolean(await holds()), { timeout: 40_000, interval: 20 })
        .toBe(true)
      return [name, Math.round(performance.now() - since)] as const
    }),
  )
  return Object.fromEntries(reached)
}

/** `200×310, 503×4`: how many requests got each status (and error code). */
function tally(outcomes: Outcome[]) {
  const counts = new Map<string, number>()
  for (const { status, code } of outcomes) {
    const key = `${status}${code ? ` ${code}` : ''}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  return [...counts].map(([key, count]) => `${key}×${count}`).join(', ')
}
