import type { UserRow } from '../../db/schema.js'
import { callerOf } from '../../graphql/context.js'
import { followTopic } from '../../graphql/subscriptions.js'
import type { EventBus } from '../../platform/infrastructure/events.js'
import type { DomainResolvers } from '../domain-module.js'
import { presenceTopics, type UserStatusChangedEvent } from './presence-topics.js'

/** What presence needs of accounts: the user a status is about. */
export interface Accounts {
  find(userId: number): Promise<UserRow | undefined>
}

export function createPresenceResolvers(events: Pick<EventBus, 'subscribe'>, accounts: Accounts) {
  return {
    UserStatus: {
      userId: (status) => String(status.userId),
      user: async (status) => (await accounts.find(status.userId)) ?? null,
    },
    Subscription: {
      userStatusChanged: {
        subscribe: (_root, _args, context) => {
          callerOf(context)
          return followTopic(events, presenceTopics.statusChanged, context)
        },
        resolve: (event: UserStatusChangedEvent) => event.userStatusChanged,
      },
    },
  } satisfies DomainResolvers
}
