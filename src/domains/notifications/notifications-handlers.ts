import { defaulted, type ServiceHandlers } from '../../http/operations.js'
import { principalOf } from '../../http/security.js'
import type { NotificationsService } from './notifications-service.js'

export function createNotificationHandlers(notifications: NotificationsService) {
  return {
    async listNotifications(request) {
      const { page, limit, unread } = request.query
      const result = await notifications.page(principalOf(request), {
        page: defaulted(page, 'page'),
        limit: defaulted(limit, 'limit'),
        unreadOnly: defaulted(unread, 'unread'),
      })
      return { data: result.items, pagination: result.pagination }
    },

    async markNotificationRead(request) {
      return { data: await notifications.markRead(principalOf(request), request.params.id) }
    },
  } satisfies Partial<ServiceHandlers>
}
