import { callerOf } from '../../graphql/context.js'
import { followTopic } from '../../graphql/subscriptions.js'
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
        subscribe: (_root, _args, context) =>
          followTopic(events, notificationTopics.added(callerOf(context).userId), context),
        resolve: (event: NotificationAddedEvent) => event.notificationAdded,
      },
    },
  } satisfies DomainResolvers
}
