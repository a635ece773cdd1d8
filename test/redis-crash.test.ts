import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { collect, graphql, subscriptionsActive, wsClient } from './helpers/graphql.js'
import { ownRedis, redisUrl } from './helpers/redis.js'
import { startServer, type TestServer } from './helpers/server.js'

const SEND = `mutation ($text: String!, $chatId: ID!) {
  sendMessage(text: $text, author: "crash", chatId: $chatId) { id }
}`

/**
 * Redis killed outright (SIGKILL) under a live subscription, then started again on the
 * same port, empty: what was sent meanwhile is stored, answered, and delivered once
 * Redis is back, once and in order.
 */
describe.runIf(redisUrl).each(backends)('a Redis that crashes on $name', (backend) => {
  let redis: Awaited<ReturnType<typeof ownRedis>>
  let server: TestServer
  const chatId = `crash-${Date.now()}`
  const send = (text: string) => graphql(server.baseUrl, SEND, { text, chatId })

  beforeAll(async () => {
    redis = await ownRedis()
    server = await startServer(backend, { REDIS_URL: redis.url })
  })
  afterAll(async () => {
    await server?.close()
    await redis?.stop()
  })

  it('loses nothing that was sent while it was down', async () => {
    const client = wsClient(server.baseUrl)
    const subscription = collect(
      client,
      `subscription { messageAdded(chatId: "${chatId}") { text } }`,
    )
    await subscriptionsActive(server.events, 1)
    await send('before')
    await subscription.until(1)

    await redis.kill()
    await expect.poll(async () => (await fetch(`${server.baseUrl}/ready`)).status).toBe(503)
    const during = ['during 1', 'during 2', 'during 3']
    for (const text of during) {
      expect((await send(text)).body.data.sendMessage.id).toMatch(/^\d+$/)
    }

    const restartedAt = performance.now()
    await redis.start()
    await subscription.until(1 + during.length, 20_000)
    const deliveredMs = Math.round(performance.now() - restartedAt)
    await send('after')
    await subscription.until(2 + during.length)
    expect(subscription.items.map((item) => item.messageAdded.text)).toEqual([
      'before',
      ...during,
      'after',
    ])
    console.info(
      `redis crash: ${during.length}/${during.length} messages sent while it was down delivered ${deliveredMs} ms after it restarted`,
    )
    subscription.dispose()
    await client.dispose()
  })
})
