import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { collect, graphql, subscriptionsActive, wsClient } from './helpers/graphql.js'
import { redisUrl } from './helpers/redis.js'
import { startServer, type TestServer } from './helpers/server.js'

const MESSAGES = 300
const SUBSCRIBERS_PER_CHAT_AND_INSTANCE = 6
const CHATS = 3

const SEND = `mutation ($text: String!, $chatId: ID!) {
  sendMessage(text: $text, author: "load", chatId: $chatId) { id }
}`

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN

describe.runIf(redisUrl).each(backends)('two instances through Redis on $name', (backend) => {
  let instances: TestServer[]
  // Unique per run: the Redis server is shared with whatever else runs on this machine.
  const run = `${Date.now()}-${Math.random().toString(36).slice(2, 8)}`
  const chats = Array.from({ length: CHATS }, (_, index) => `scale-${run}-${index}`)

  beforeAll(async () => {
    const first = await startServer(backend, { REDIS_URL: redisUrl as string })
    const second = await startServer(
      backend,
      { REDIS_URL: redisUrl as string },
      {
        testDatabase: first.testDatabase,
      },
    )
    instances = [second, first]
  })
  afterAll(async () => {
    for (const instance of instances ?? []) await instance.close()
  })

  it('delivers every message to every matching subscriber on both, once and in order', async () => {
    const clients = instances.map((instance) => wsClient(instance.baseUrl))
    const subscribers = instances.flatMap((_, instanceIndex) =>
      chats.flatMap((chatId) =>
        Array.from({ length: SUBSCRIBERS_PER_CHAT_AND_INSTANCE }, () => ({
          chatId,
          stream: collect<{ messageAdded: { id: string; text: string; createdAt: string } }>(
            clients[instanceIndex] as NonNullable<(typeof clients)[number]>,
            `subscription { messageAdded(chatId: "${chatId}") { id text createdAt } }`,
          ),
        })),
      ),
    )
    const perInstance = CHATS * SUBSCRIBERS_PER_CHAT_AND_INSTANCE
    for (const instance of instances) await subscriptionsActive(instance.events, perInstance)

    const expected = new Map<string, string[]>(chats.map((chatId) => [chatId, []]))
    const sentAt = new Map<string, number>()
    for (let index = 0; index < MESSAGES; index += 1) {
      const chatId = chats[index % CHATS] as string
      const instance = instances[index % instances.length] as TestServer
      const text = `m${index}`
      sentAt.set(text, performance.now())
      const response = await graphql(instance.baseUrl, SEND, { text, chatId })
      expect(response.body.errors).toBeUndefined()
      expected.get(chatId)?.push(text)
    }

    const latencies: number[] = []
    await Promise.all(
      subscribers.map(async ({ chatId, stream }) => {
        const want = expected.get(chatId) ?? []
        await stream.until(want.length, 30_000)
        const receivedAt = performance.now()
        latencies.push(receivedAt - (sentAt.get(want.at(-1) as string) ?? receivedAt))
      }),
    )
    // Let any duplicate arrive before counting.
    await new Promise((resolve) => setTimeout(resolve, 300))
    for (const { chatId, stream } of subscribers) {
      expect(stream.items.map((item) => item.messageAdded.text)).toEqual(expected.get(chatId))
    }
    // The row crossed Redis with its timestamp intact.
    const first = subscribers[0]?.stream.items[0]?.messageAdded
    expect(new Date(first?.createdAt ?? '').toISOString()).toBe(first?.createdAt)
    const delivered = subscribers.reduce((sum, { stream }) => sum + stream.items.length, 0)
    const wanted = subscribers.reduce(
      (sum, { chatId }) => sum + (expected.get(chatId)?.length ?? 0),
      0,
    )
    expect(delivered).toBe(wanted)
    latencies.sort((a, b) => a - b)
    console.log(
      `scale-out (${backend.name}): ${MESSAGES} messages, ${subscribers.length} subscribers on 2 instances, ` +
        `delivered ${delivered}/${wanted}; last-message latency p50 ${percentile(latencies, 50).toFixed(1)} ms, ` +
        `p99 ${percentile(latencies, 99).toFixed(1)} ms`,
    )
    for (const { stream } of subscribers) stream.dispose()
    for (const client of clients) await client.dispose()
  }, 120_000)
})
