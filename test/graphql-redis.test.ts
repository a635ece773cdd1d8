import { once } from 'node:events'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { graphql, watchedChat } from './helpers/graphql.js'
import { redisRelay, redisUrl } from './helpers/redis.js'
import { startServer, type TestServer } from './helpers/server.js'

describe.runIf(redisUrl).each(backends)('a Redis outage on $name', (backend) => {
  let relay: Awaited<ReturnType<typeof redisRelay>>
  let server: TestServer
  const chatId = `outage-${Date.now()}`

  beforeAll(async () => {
    relay = await redisRelay(redisUrl as string)
    server = await startServer(backend, { REDIS_URL: relay.url })
  })
  afterAll(async () => {
    await server?.close()
    await relay?.close()
  })

  it('keeps the service answering, reports not ready, and delivers what was sent meanwhile', async () => {
    const chat = await watchedChat(server, chatId)
    await chat.send('before')
    await chat.delivered(1)

    await relay.cut()
    // A reconnect that Redis refuses: once its error is out, the process must still stand.
    await once((server.redis as NonNullable<typeof server.redis>).subscriber, 'error')
    await expect.poll(async () => (await fetch(`${server.baseUrl}/ready`)).status).toBe(503)
    expect((await fetch(`${server.baseUrl}/health`)).status).toBe(200)
    const during = ['during 1', 'during 2', 'during 3']
    const sentAt = performance.now()
    for (const text of during) {
      expect(await chat.send(text)).toMatch(/^\d+$/)
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
    await chat.delivered(1 + during.length, 20_000)
    const deliveredMs = Math.round(performance.now() - restoredAt)
    await chat.send('after')
    await chat.delivered(2 + during.length)
    expect(chat.texts()).toEqual(['before', ...during, 'after'])
    expect((await fetch(`${server.baseUrl}/ready`)).status).toBe(200)
    console.info(
      `redis outage: sendMessage answered in ${answeredMs} ms on average while Redis was away; ` +
        `${during.length}/${during.length} messages delivered ${deliveredMs} ms after it came back`,
    )
    await chat.close()
  })
})
