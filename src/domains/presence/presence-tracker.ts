import type { FastifyBaseLogger } from 'fastify'
import type { SocketObserver } from '../../graphql/websocket/socket-seats.js'
import type { EventBus } from '../../platform/infrastructure/events.js'
import type { CountChange, Departure, PresenceCounts } from './presence-counts.js'
import { presenceTopics, type UserStatus } from './presence-topics.js'

interface Dependencies {
  counts: PresenceCounts
  events: Pick<EventBus, 'publish'>
  log: FastifyBaseLogger
}

/**
 * Who is online: the sockets of each user, counted as they open and close, and a flip
 * published when a user's first one opens or their last one closes anywhere.
 */
export function createPresenceTracker({ counts, events, log }: Dependencies) {
  const inFlight = new Set<Promise<void>>()
  const announce = (status: UserStatus) =>
    events.publish(presenceTopics.statusChanged, { userStatusChanged: status })
  const online = (userId: number) => announce({ userId, online: true, lastSeen: null })
  const offline = ({ userId, lastSeen }: Departure) => announce({ userId, online: false, lastSeen })

  /** Runs a count change; one that fails is logged, and the next heartbeat puts it right. */
  function track(change: () => Promise<void>) {
    const running = change().catch((error: unknown) => {
      log.warn({ err: error }, 'presence could not be counted; the next heartbeat corrects it')
    })
    inFlight.add(running)
    void running.finally(() => inFlight.delete(running))
  }

  /** Proves this instance alive, and publishes what the counts changed. */
  async function beatOnce(): Promise<void> {
    const { departed, returned } = await counts.heartbeat()
    await Promise.all([...departed.map(offline), ...returned.map(online)])
  }

  // One heartbeat at a time, whoever asks (the timer, or a change that found this
  // instance unregistered); asked while one runs, one more follows it.
  let beating: Promise<void> | undefined
  let again = false
  function heartbeat(): Promise<void> {
    if (beating) {
      again = true
      return beating
    }
    beating = beatOnce().finally(() => {
      beating = undefined
      if (again) {
        again = false
        void heartbeat().catch(() => {})
      }
    })
    return beating
  }

  function counted(change: CountChange, flip: () => Promise<void>) {
    if (change === 'flipped') return flip()
    if (change === 'unregistered') return heartbeat()
    return undefined
  }

  const sockets: SocketObserver = {
    userJoined(userId) {
      track(async () => counted(await counts.arrive(userId), () => online(userId)))
    },
    userLeft(userId) {
      track(async () =>
        counted(await counts.leave(userId), () =>
          offline({ userId, lastSeen: new Date().toISOString() }),
        ),
      )
    },
  }

  return {
    sockets,
    heartbeat,

    /** Once the sockets have closed: this instance's users leave with it. */
    async stop(): Promise<void> {
      await Promise.all(inFlight)
      await Promise.all((await counts.forgetThisInstance()).map(offline))
    },
  }
}

export type PresenceTracker = ReturnType<typeof createPresenceTracker>
