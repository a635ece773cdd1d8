import type { Executor } from '../../db/database.js'
import type { EventBus, Topic } from './events.js'
import type { LiveAccounts } from './live-accounts.js'
import type { Outbox, PendingEvent } from './outbox.js'

/** Every session of the account issued under an older version than this has ended. */
export interface SessionsEndedEvent {
  userId: number
  sessionVersion: number
}

export const sessionTopics = {
  ended: 'accounts/sessions-ended' as Topic<SessionsEndedEvent>,
}

interface Dependencies {
  events: Pick<EventBus, 'listen'>
  outbox: Pick<Outbox, 'enqueue' | 'publish'>
  liveAccounts: Pick<LiveAccounts, 'sessionsEnded'>
}

/**
 * How every instance hears at once that an account's sessions ended (a logout-all, a
 * new password, a role change, a deletion): the event goes through the outbox, in the
 * transaction of the change, so it is announced once that commits, and by the relay
 * should this instance die first. Each instance's live-accounts then refuses the older
 * tokens and closes their sockets. One that misses it (Redis away) still refuses them
 * once its belief in the old version runs out (live-accounts.ts).
 */
export function createSessionAnnouncements({ events, outbox, liveAccounts }: Dependencies) {
  let stopListening: (() => void) | undefined

  return {
    /** Records the end in the caller's transaction: announce it once that commits. */
    record(
      executor: Executor,
      ended: SessionsEndedEvent,
    ): Promise<PendingEvent<SessionsEndedEvent>> {
      return outbox.enqueue(executor, sessionTopics.ended, ended)
    },

    /** Applies a committed end here at once, and announces it to every instance. */
    async announce(pending: PendingEvent<SessionsEndedEvent>): Promise<void> {
      liveAccounts.sessionsEnded(pending.payload.userId, pending.payload.sessionVersion)
      await outbox.publish([pending])
    },

    /** Listens before the first request, so no announcement after it is missed. */
    async start(): Promise<void> {
      stopListening = await events.listen(sessionTopics.ended, ({ userId, sessionVersion }) =>
        liveAccounts.sessionsEnded(userId, sessionVersion),
      )
    },

    async stop(): Promise<void> {
      stopListening?.()
    },
  }
}

export type SessionAnnouncements = ReturnType<typeof createSessionAnnouncements>
