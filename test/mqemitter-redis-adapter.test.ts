import type { EventEmitter } from 'node:events'
import { createServer } from 'node:net'
import { Redis } from 'ioredis'
import type { MQEmitter } from 'mqemitter'
import mqemitterRedis from 'mqemitter-redis'
import { afterEach, describe, expect, it } from 'vitest'
import { redisEmitter } from '../src/platform/infrastructure/mqemitter-redis-adapter.js'

/**
 * What src/platform/infrastructure/mqemitter-redis-adapter.ts relies on in mqemitter-redis, beyond its
 * documented API: the errors of the connections it is given reach its `state` emitter,
 * where, unheard, they are thrown. Should a release change either, these fail, and the
 * adapter is to be looked at again (or dropped, if mqemitter-redis handles them itself).
 * No Redis server is needed: the connections are never connected, or refused.
 */

const stateOf = (emitter: MQEmitter) => (emitter as unknown as { state: EventEmitter }).state

const connections: Redis[] = []
/** A connection that connects only when told to (lazyConnect), or to `port`. */
const connection = (port?: number) => {
  const made =
    port === undefined
      ? new Redis({ lazyConnect: true })
      : new Redis({ host: '127.0.0.1', port, retryStrategy: () => 20 })
  connections.push(made)
  return made
}
afterEach(() => {
  for (const each of connections.splice(0)) each.disconnect()
})

describe('mqemitter-redis, as the adapter relies on it', () => {
  it('re-emits an error of either connection on its state emitter', () => {
    const publisher = connection()
    const subscriber = connection()
    const emitter = mqemitterRedis({ pubConn: publisher, subConn: subscriber })
    const heard: Error[] = []
    stateOf(emitter).on('error', (error: Error) => heard.push(error))
    const refused = [new Error('publisher refused'), new Error('subscriber refused')]
    publisher.emit('error', refused[0])
    subscriber.emit('error', refused[1])
    expect(heard).toEqual(refused)
  })

  it('throws an error of a connection when nothing listens on its state', () => {
    const publisher = connection()
    mqemitterRedis({ pubConn: publisher, subConn: connection() })
    const refused = new Error('refused')
    expect(() => publisher.emit('error', refused)).toThrow(refused)
  })
})

describe('redisEmitter', () => {
  it('absorbs the errors of its connections', () => {
    const publisher = connection()
    const subscriber = connection()
    redisEmitter({ publisher, subscriber })
    expect(() => publisher.emit('error', new Error('refused'))).not.toThrow()
    expect(() => subscriber.emit('error', new Error('refused'))).not.toThrow()
  })

  it('rides out a Redis that refuses every connection', async () => {
    const port = await closedPort()
    const [publisher, subscriber] = [connection(port), connection(port)]
    // Heard on the connections, before mqemitter-redis hears them: a listener on its
    // state would absorb them itself. Unabsorbed, the first would fail this file.
    const refusals: string[] = []
    for (const each of [publisher, subscriber]) {
      each.on('error', (error: NodeJS.ErrnoException) => refusals.push(String(error.code)))
    }
    redisEmitter({ publisher, subscriber })
    // Each connection retries every 20 ms: several refusals each, none thrown.
    await expect.poll(() => refusals.length).toBeGreaterThanOrEqual(6)
    expect(new Set(refusals)).toEqual(new Set(['ECONNREFUSED']))
  })
})

/** A local port that nothing listens on. */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })
}
