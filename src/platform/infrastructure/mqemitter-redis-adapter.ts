import type { EventEmitter } from 'node:events'
import type { MQEmitter } from 'mqemitter'
import mqemitterRedis from 'mqemitter-redis'
import type { RedisConnections } from './redis.js'

/**
 * The one reliance on mqemitter-redis beyond its documented API, which needs it pinned
 * exactly (7.2.1) and is checked by test/mqemitter-redis-adapter.test.ts.
 *
 * mqemitter-redis listens for `error` on the connections it is given and re-emits each
 * error on an EventEmitter of its own, `state`, which neither its README nor its typings
 * mention. An `error` without a listener is thrown, so each reconnect Redis refuses
 * during an outage would take the process down. A listener on `state` absorbs them; the
 * connections' owner (redis.ts) logs them already. Upstream, open:
 * https://github.com/mcollina/mqemitter-redis/issues/42 (document `state`, type it) and
 * https://github.com/mcollina/mqemitter-redis/issues/15 (its errors cannot be handled).
 */
export function redisEmitter(redis: Pick<RedisConnections, 'publisher' | 'subscriber'>) {
  const emitter: MQEmitter = mqemitterRedis({ pubConn: redis.publisher, subConn: redis.subscriber })
  ;(emitter as unknown as { state: EventEmitter }).state.on('error', () => {})
  return emitter
}
