import { once } from 'node:events'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { collect, graphql, subscriptionsActive, wsClient } from './helpers/graphql.js'
import { redisRelay, redisUrl } from './helpers/redis.js'
import { startServer, type TestServer } from './helpers/server.js'

const SEND = `mutation ($text: String!, $chatId: ID!) {
  sendMessage(text: $text, author: "relay", chatId: $chatId) { id }
}`

describe.runIf(redisUrl).each(backends)('a Redis outage on $name', (backend) => {
  let relay: Awaited<ReturnType<typeof redisRelay>>
  let server: TestServer
  const chatId = `outage-${Date.now()}`
  const send = (text: string) => graphql(server.baseUrl, SEND, { text, chatId })

  beforeAll(async () => {
    relay = await redisRelay(redisUrl as string)
    server = await startServer(backend, { REDIS_URL: relay.url })
  })
  afterAll(async () => {
    await server?.close()
    await relay?.close()
  })

  it('keeps the service answering, reports not ready, and delivers what was sent meanwhile', async () => {
    const client = wsClient(server.baseUrl)
    const subscription = collect(
      client,
      `subscription { messageAdded(chatId: "${chatId}") { text } }`,
    )
    await subscriptionsActive(server.events, 1)
    await send('before')
    await subscription.until(1)

    await relay.cut()
    // A reconnect that Redis refuses: once its error is out, the process must still stand.
    await once((server.redis as NonNullable<typeof server.redis>).subscriber, 'error')
    await expect.poll(async () => (await fetch(`${server.baseUrl}/ready`)).status).toBe(503)
    expect((await fetch(`${server.baseUrl}/health`)).status).toBe(200)
    const during = ['during 1', 'during 2', 'during 3']
    const sentAt = performance.now()
    for (const text of during) {
      expect((await send(text)).body.data.sendMessage.id).toMatch(/^\d+$/)
    }
    const answeredMs = Math.round((performance.now() - sentAt) / during.length)
    const listed = await graphql(server.baseUrl, `{ messages(chatId: "${chatId}") { text } }`)
    expect(listed.body.data.messages.map((each: { text: string }) => each.text)).toEqual([
      'before',
      ...during,
    ])

    const restoredAt = performance.now()
    await relay.restore()
    // The outbox kept them: the live subscription receives them once Redis is back.
    await subscription.until(1 + during.length, 20_000)
    const deliveredMs = Math.round(performance.now() - restoredAt)
    await send('after')
    await subscription.until(2 + during.length)
    expect(subscription.items.map((item) => item.messageAdded.text)).toEqual([
      'before',
      ...during,
      'after',
    ])
    expect((await fetch(`${server.baseUrl}/ready`)).status).toBe(200)
    console.info(
      `redis outage: sendMessage answered in ${answeredMs} ms on average while Redis was away; ` +
        `${during.length}/${during.length} messages delivered ${deliveredMs} ms after it came back`,
    )
    subscription.dispose()
    await client.dispose()
  })
})
