import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { pino } from 'pino'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { connectRedis, type RedisConnections } from '../src/platform/infrastructure/redis.js'
import { holdTheLoop } from './helpers/hold-the-loop.js'
import { redisRelay, redisUrl } from './helpers/redis.js'
import type { TcpRelay } from './helpers/tcp-relay.js'

/**
 * The service's Redis connections tell a Redis gone silent from a process that was held
 * up, and what they owed when they give up on a silent Redis fails rather than waits.
 */
const log = pino({ level: 'silent' })

describe.runIf(redisUrl)("the service's Redis connections", () => {
  let redis: RedisConnections | undefined
  let relay: TcpRelay | undefined
  const connected = async (url: string) => {
    redis = connectRedis({
      url,
      keyPrefix: `connections-${randomBytes(6).toString('hex')}:`,
      timeoutMs: 100,
      log,
    })
    const { publisher } = redis
    await vi.waitUntil(() => publisher.status === 'ready')
    return redis
  }
  afterEach(async () => {
    await relay?.restore()
    await redis?.close()
    await relay?.close()
    redis = undefined
    relay = undefined
  })

  it('do not take a held-up process for a silent Redis: the answer that waited unread is taken', async () => {
    // The publisher: its commands have no deadline (the commands connection's is 100 ms).
    const { publisher: commands } = await connected(redisUrl as string)
    let reconnects = 0
    commands.on('reconnecting', () => reconnects++)
    // Redis answers after 400 ms; the watch sees the command owed before the loop is held.
    const answered = commands.blpop('never-pushed', 0.4)
    await sleep(300)
    await holdTheLoop(1500)

    await expect(answered).resolves.toBeNull()
    expect(await commands.ping()).toBe('PONG')
    expect(reconnects).toBe(0)
    expect(commands.status).toBe('ready')
  })

  it('do not take a held-up process for a slow Redis: a command answered meanwhile succeeds', async () => {
    const connections = await connected(redisUrl as string)
    // Redis answers after 150 ms; the watch sees the command owed before the loop is held,
    // and next looks 400 ms later, past the 100 ms deadline, with the answer unread.
    const answered = connections.commands.blpop('never-pushed', 0.15)
    await sleep(50)
    await holdTheLoop(400)
    await expect(answered).resolves.toBeNull()
    expect(connections.answersInTime()).toBe(true)
  })

  it('fail a command owed past the deadline at once, and answer in time again once Redis does', async () => {
    relay = await redisRelay(redisUrl as string)
    const connections = await connected(relay.url)
    relay.stall()
    const started = performance.now()
    await expect(connections.commands.get('late')).rejects.toThrow('did not answer within 100 ms')
    // The deadline, and at most a quarter of it on each side for the watch's rounds.
    expect(performance.now() - started).toBeLessThan(1000)
    expect(connections.answersInTime()).toBe(false)
    await relay.restore()
    await vi.waitUntil(() => connections.answersInTime(), { timeout: 5000 })
  })

  it('fail what a silent Redis owed, and do not send it again once Redis answers', async () => {
    relay = await redisRelay(redisUrl as string)
    const { publisher: commands } = await connected(relay.url)
    // The publisher puts no prefix before its keys: one of this run's own.
    const counter = `counted-${randomBytes(6).toString('hex')}`
    relay.stall()

    await expect(commands.incr(counter)).rejects.toThrow('closed before it answered')
    // The stalled connection that held the INCR is dropped with what it held.
    await relay.cut()
    await relay.restore()
    await vi.waitUntil(() => commands.status === 'ready', { timeout: 10_000 })
    // A resent INCR would go ahead of this GET on the new connection.
    expect(await commands.get(counter)).toBeNull()
  })
})
