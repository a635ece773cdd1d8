import type { Infrastructure } from '../domain-module.js'
import { createNotificationHandlers } from './notifications-handlers.js'
import { createNotificationsRepository } from './notifications-repository.js'
import { createNotificationResolvers } from './notifications-resolvers.js'
import { createNotificationsService } from './notifications-service.js'

/** What the service tells each user, kept to be read and delivered live to its owner. */
export function createNotificationsModule({
  database,
  events,
  outbox,
}: Pick<Infrastructure, 'database' | 'events' | 'outbox'>) {
  const notifications = createNotificationsService({
    notifications: createNotificationsRepository(database.db),
    outbox,
  })
  return {
    name: 'notifications',
    handlers: createNotificationHandlers(notifications),
    resolvers: createNotificationResolvers(notifications, events),
    /** How other domains tell a user something, inside their own transactions. */
    notifier: { notify: notifications.notify },
  }
}
