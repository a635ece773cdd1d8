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

  it('keeps the service answering, reports not ready, and resumes delivery', async () => {
    const client = wsClient(server.baseUrl)
    const subscription = collect(
      client,
      `subscription { messageAdded(chatId: "${chatId}") { text } }`,
    )
    await subscriptionsActive(server.events, 1)
    await send('before')
    await subscription.until(1)

    await relay.cut()
    await expect.poll(async () => (await fetch(`${server.baseUrl}/ready`)).status).toBe(503)
    expect((await fetch(`${server.baseUrl}/health`)).status).toBe(200)
    const during = await send('during')
    expect(during.body.data.sendMessage.id).toMatch(/^\d+$/)
    const listed = await graphql(server.baseUrl, `{ messages(chatId: "${chatId}") { text } }`)
    expect(listed.body.data.messages.map((each: { text: string }) => each.text)).toEqual([
      'before',
      'during',
    ])

    await relay.restore()
    await expect
      .poll(async () => (await fetch(`${server.baseUrl}/ready`)).status, { timeout: 15_000 })
      .toBe(200)
    // The live subscription survived the outage; what is sent now reaches it.
    await expect
      .poll(
        async () => {
          await send('after')
          return subscription.items.some((item) => item.messageAdded.text === 'after')
        },
        { timeout: 15_000, interval: 500 },
      )
      .toBe(true)
    subscription.dispose()
    await client.dispose()
  }, 60_000)
})
