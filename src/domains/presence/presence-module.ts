import type { Infrastructure } from '../domain-module.js'
import { createMemoryPresenceCounts, createRedisPresenceCounts } from './presence-counts.js'
import { type Accounts, createPresenceResolvers } from './presence-resolvers.js'
import { createPresenceTracker } from './presence-tracker.js'

/**
 * Presence: who is online, on any instance. With Redis, an instance that dies without
 * closing its sockets stops its heartbeat; within PRESENCE_TIMEOUT_MS a survivor counts
 * its users out and publishes them offline.
 */
export function createPresenceModule(
  {
    events,
    redis,
    config,
    log,
    instanceId,
  }: Pick<Infrastructure, 'events' | 'redis' | 'config' | 'log' | 'instanceId'>,
  { accounts }: { accounts: Accounts },
) {
  // Silent for three beats, an instance is dead; a survivor notices at its next beat.
  const beatMs = config.presenceTimeoutMs / 4
  const counts = redis
    ? createRedisPresenceCounts({
        redis: redis.commands,
        keyPrefix: redis.keyPrefix,
        instanceId,
        silenceMs: beatMs * 3,
      })
    : createMemoryPresenceCounts()
  const tracker = createPresenceTracker({ counts, events, log })
  let beating: NodeJS.Timeout | undefined
  const beat = () =>
    tracker.heartbeat().catch((error: unknown) => {
      log.warn({ err: error }, 'presence heartbeat failed; trying again at the next beat')
    })

  return {
    name: 'presence',
    resolvers: createPresenceResolvers(events, accounts),
    sockets: tracker.sockets,
    async start() {
      await beat()
      beating = setInterval(beat, beatMs)
      beating.unref()
    },
    async stop() {
      clearInterval(beating)
      await tracker.stop()
    },
  }
}
