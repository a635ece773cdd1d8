import { callerOf } from '../../graphql/context.js'
import { followInOrder } from '../../graphql/resumable.js'
import type { EventBus } from '../../platform/infrastructure/events.js'
import { rowIdOf } from '../../platform/input-rules.js'
import type { DomainResolvers } from '../domain-module.js'
import type { NotificationsService } from './notifications-service.js'
import { type NotificationAddedEvent, notificationTopics } from './notifications-topics.js'

export function createNotificationResolvers(
  notifications: NotificationsService,
  events: Pick<EventBus, 'subscribe'>,
) {
  return {
    Notification: {
      id: (notification) => String(notification.id),
    },
    Query: {
      notifications: (_root, args, context) => notifications.newest(callerOf(context), args),
    },
    Mutation: {
      markNotificationRead: (_root, { id }, context) =>
        notifications.markRead(callerOf(context), rowIdOf(id)),
    },
    Subscription: {
      notificationAdded: {
        subscribe: async (_root, { after }, context) => {
          const caller = callerOf(context)
          return followInOrder(
            events,
            notificationTopics.added(caller.userId),
            context,
            notifications.orderedFor(caller.userId),
            {
              start: await notifications.startOf(caller, after),
              tooLong: notifications.replayTooLong,
            },
          )
        },
        resolve: (event: NotificationAddedEvent) => event.notificationAdded,
      },
    },
  } satisfies DomainResolvers
}
