import { pino } from 'pino'
import { afterAll, describe, expect, it } from 'vitest'
import { createEventBus, type Topic } from '../src/platform/infrastructure/events.js'
import { connectRedis } from '../src/platform/infrastructure/redis.js'
import { redisUrl } from './helpers/redis.js'

const log = pino({ level: 'silent' })
const redisOf = (url: string) => () =>
  connectRedis({ url, keyPrefix: `events-test-${Date.now()}:`, timeoutMs: 100, log })
const buses = [
  { name: 'in-process', redis: () => undefined },
  ...(redisUrl ? [{ name: 'Redis', redis: redisOf(redisUrl) }] : []),
]

describe.each(buses)('the event bus, $name', ({ redis: connect }) => {
  const redis = connect()
  const events = createEventBus({ redis, log })
  afterAll(async () => {
    await events.close()
    await redis?.close()
  })

  it('delivers every event published without an id (lossy figures), not only the first', async () => {
    // A lossy publish is dropped while Redis is not connected yet: wait for it first.
    await expect
      .poll(() =>
        redis
          ? redis.ping().then(
              () => true,
              () => false,
            )
          : true,
      )
      .toBe(true)
    const topic = 'tests/figures' as Topic<{ figure: number }>
    const stream = await events.subscribe(topic, { maxQueued: 10, onOverflow: () => {} })
    for (const figure of [1, 2, 3]) await events.publish(topic, { figure })
    const received = []
    for (let count = 0; count < 3; count += 1) received.push((await stream.next()).value)
    await stream.return?.()
    expect(received).toEqual([{ figure: 1 }, { figure: 2 }, { figure: 3 }])
  })
})
