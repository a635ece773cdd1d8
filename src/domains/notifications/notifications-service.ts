import type { Executor } from '../../db/database.js'
import type { NotificationRow } from '../../db/schema.js'
import { MAX_REPLAYED, type OrderedScope, type Start } from '../../graphql/resumable.js'
import { assertValidFields, notFound, validationFailed } from '../../platform/errors.js'
import type { Principal } from '../../platform/infrastructure/access-tokens.js'
import type { Outbox, PendingEvent } from '../../platform/infrastructure/outbox.js'
import { rowIdOf } from '../../platform/input-rules.js'
import { type PageRequest, pagePagination } from '../../platform/pagination.js'
import type { NewNotification, NotificationsRepository } from './notifications-repository.js'
import {
  type Notification,
  type NotificationAddedEvent,
  notificationTopics,
} from './notifications-topics.js'

export interface NewestNotifications {
  limit?: number | null | undefined
  before?: string | null | undefined
  unreadOnly?: boolean | null | undefined
}

interface Dependencies {
  notifications: NotificationsRepository
  outbox: Pick<Outbox, 'enqueue'>
}

export function createNotificationsService({ notifications, outbox }: Dependencies) {
  return {
    /**
     * Tells a user something, in the caller's transaction: the notification exists, and
     * its event goes out (publish it once committed), exactly when the change it reports
     * does.
     */
    async notify(
      executor: Executor,
      notification: NewNotification,
    ): Promise<PendingEvent<NotificationAddedEvent>> {
      const { previousId, ...row } = await notifications.insert(executor, notification)
      return outbox.enqueue(executor, notificationTopics.added(row.userId), {
        notificationAdded: toNotification(row),
        previousId,
      })
    },

    async page(caller: Principal, page: PageRequest & { unreadOnly: boolean }) {
      const { rows, total } = await notifications.page(
        { userId: caller.userId, unreadOnly: page.unreadOnly },
        page,
      )
      return { items: rows.map(toNotification), pagination: pagePagination(page, total) }
    },

    /**
     * The caller's newest notifications; `before` pages back. `limit` is in its range,
     * which schema.graphql declares (graphql/argument-ranges.ts).
     */
    async newest(caller: Principal, { limit, before, unreadOnly }: NewestNotifications) {
      const count = limit ?? 20
      const beforeId = before == null ? undefined : rowIdOf(before)
      assertValidFields({
        before: before == null || beforeId !== undefined ? undefined : 'must be a notification id',
      })
      const rows = await notifications.newest(
        { userId: caller.userId, unreadOnly: unreadOnly ?? false },
        { limit: count, beforeId },
      )
      return rows.map(toNotification)
    },

    /**
     * Where the caller's notificationAdded starts: after `after`, one of the caller's
     * notifications, when given. Another user's is refused as an unknown one is.
     */
    async startOf(caller: Principal, after: string | null | undefined): Promise<Start<number>> {
      if (after == null) return { scope: caller.userId }
      const afterId = rowIdOf(after)
      const own = afterId !== undefined && (await notifications.ownerOf(afterId)) === caller.userId
      assertValidFields({ after: own ? undefined : 'must be the id of one of your notifications' })
      return { scope: caller.userId, after: afterId }
    },

    /**
     * A user's notifications in the order of their ids, as stored and as the bus carries
     * them (which names no user: each user's go on a topic of their own).
     */
    orderedFor: (userId: number): OrderedScope<number, NotificationAddedEvent> => ({
      placementOf: ({ notificationAdded, previousId }) => ({
        scope: userId,
        id: notificationAdded.id,
        previousId,
      }),
      between: async (_, range) =>
        (await notifications.between(userId, range)).map((row) => ({
          notificationAdded: toNotification(row),
        })),
      newestId: () => notifications.newestId(userId),
    }),

    /** A replay longer than MAX_REPLAYED is refused, pointing to the list. */
    replayTooLong: () =>
      validationFailed({
        after: [
          `is followed by more than ${MAX_REPLAYED} notifications: read them with notifications(before), then subscribe after the newest`,
        ],
      }),

    /** Another user's notification is NOT_FOUND, as a missing one: its existence is theirs. */
    async markRead(caller: Principal, id: number | undefined): Promise<Notification> {
      const row = id === undefined ? undefined : await notifications.markRead(caller.userId, id)
      if (!row) throw notFound(`You have no notification ${id ?? ''}`.trimEnd())
      return toNotification(row)
    },
  }
}

export type NotificationsService = ReturnType<typeof createNotificationsService>

const toNotification = (row: NotificationRow): Notification => ({
  id: row.id,
  kind: row.kind,
  title: row.title,
  body: row.body,
  read: row.read,
  createdAt: row.createdAt.toISOString(),
})
