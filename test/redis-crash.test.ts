import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { topicSegment } from '../src/platform/infrastructure/events.js'
import { sessionTopics } from '../src/platform/infrastructure/session-announcements.js'
import { backends } from './helpers/backends.js'
import { watchedChat } from './helpers/graphql.js'
import { ownRedis, redisUrl } from './helpers/redis.js'
import { startServer, type TestServer } from './helpers/server.js'

/**
 * Redis killed outright (SIGKILL) under a live subscription, then started again on the
 * same port, empty: what was sent meanwhile is stored, answered, and delivered once
 * Redis is back, once and in order.
 */
describe.runIf(redisUrl).each(backends)('a Redis that crashes on $name', (backend) => {
  let redis: Awaited<ReturnType<typeof ownRedis>>
  let server: TestServer
  const chatId = `crash-${Date.now()}`

  beforeAll(async () => {
    redis = await ownRedis()
    server = await startServer(backend, { REDIS_URL: redis.url })
  })
  afterAll(async () => {
    await server?.close()
    await redis?.stop()
  })

  it('loses nothing that was sent while it was down', async () => {
    const chat = await watchedChat(server, chatId)
    await chat.send('before')
    await chat.delivered(1)

    await redis.kill()
    await expect.poll(async () => (await fetch(`${server.baseUrl}/ready`)).status).toBe(503)
    const during = ['during 1', 'during 2', 'during 3']
    for (const text of during) {
      expect(await chat.send(text)).toMatch(/^\d+$/)
    }

    const restartedAt = performance.now()
    await redis.start()
    await chat.delivered(1 + during.length, 20_000)
    const deliveredMs = Math.round(performance.now() - restartedAt)
    await chat.send('after')
    await chat.delivered(2 + during.length)
    expect(chat.texts()).toEqual(['before', ...during, 'after'])
    console.info(
      `redis crash: ${during.length}/${during.length} messages sent while it was down delivered ${deliveredMs} ms after it restarted`,
    )
    await chat.close()
  })

  it('starts while it is down, and listens for every instance once it is back', async () => {
    await redis.kill()
    const started = await startServer(backend, { REDIS_URL: redis.url })
    try {
      expect((await started.api.get('/products')).status).toBe(200)
      expect((await fetch(`${started.baseUrl}/ready`)).status).toBe(503)
      await redis.start()
      await expect.poll(async () => (await fetch(`${started.baseUrl}/ready`)).status).toBe(200)
      // What the instance listens for from the others: the sessions an account ended.
      const channel = `${topicSegment(started.testDatabase.redisKeyPrefix)}/${sessionTopics.ended}`
      const probe = new Redis(redis.url)
      try {
        await expect.poll(() => probe.pubsub('CHANNELS', channel)).toEqual([channel])
      } finally {
        probe.disconnect()
      }
    } finally {
      await started.close()
    }
  })

  it('shuts down while it is still down', async () => {
    const closing = await startServer(backend, { REDIS_URL: redis.url })
    const chat = await watchedChat(closing, `${chatId}-closing`)
    await redis.kill()
    await expect.poll(async () => (await fetch(`${closing.baseUrl}/ready`)).status).toBe(503)
    // Every step of a shutdown is bounded: none waits on a Redis that cannot answer.
    const outcome = await Promise.race([
      closing.close().then(() => 'closed'),
      new Promise((resolve) => setTimeout(resolve, 15_000, 'still closing')),
    ])
    expect(outcome).toBe('closed')
    await chat.close()
    await redis.start()
  })
})
