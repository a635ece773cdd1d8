import { and, count, desc, eq, getTableColumns, lt, type SQL, sql } from 'drizzle-orm'
import type { Database, Executor } from '../../db/database.js'
import { type IdRange, idsIn, newestIdOf, SCOPE_LOCKS, scopeLock } from '../../db/ordered-scopes.js'
import { type NotificationRow, notifications } from '../../db/schema.js'
import { offsetOf, type PageRequest } from '../../platform/pagination.js'

export type NewNotification = Pick<
  typeof notifications.$inferInsert,
  'userId' | 'kind' | 'title' | 'body'
>

export interface NotificationQuery {
  userId: number
  unreadOnly: boolean
}

export function createNotificationsRepository(db: Database) {
  const matching = ({ userId, unreadOnly }: NotificationQuery, ...more: (SQL | undefined)[]) =>
    and(
      eq(notifications.userId, userId),
      unreadOnly ? eq(notifications.read, false) : undefined,
      ...more,
    )

  return {
    /**
     * Stores a notification once the user's earlier ones have committed (the user's lock,
     * held by the caller's transaction until it ends), so that their ids ascend in commit
     * order; answers it with the id of the user's one before it (0 before the first).
     * Taken last in any transaction (after its orders' and products' rows), the lock
     * waits on no one who waits on it.
     */
    async insert(
      executor: Executor,
      notification: NewNotification,
    ): Promise<NotificationRow & { previousId: number }> {
      await executor.execute(
        sql`select ${scopeLock(SCOPE_LOCKS.notificationsOfUser, notification.userId)}`,
      )
      // A statement of its own after the lock's: its snapshot has every one committed before.
      const [row] = await executor
        .insert(notifications)
        .values(notification)
        .returning({
          ...getTableColumns(notifications),
          previousId: sql<number>`(select coalesce(max(earlier.id), 0) from ${notifications}
            as earlier where earlier.user_id = ${notification.userId})`.mapWith(Number),
        })
      if (!row) throw new Error('INSERT … RETURNING gave no row')
      return row
    },

    /** The user's notifications with an id in (afterId, beforeId), oldest first. */
    between(userId: number, range: IdRange) {
      return db
        .select()
        .from(notifications)
        .where(and(eq(notifications.userId, userId), idsIn(notifications.id, range)))
        .orderBy(notifications.userId, notifications.id)
        .limit(range.limit)
    },

    /** The id of the user's newest notification, 0 when there is none. */
    async newestId(userId: number): Promise<number> {
      const [row] = await db
        .select({ id: newestIdOf(notifications.id) })
        .from(notifications)
        .where(eq(notifications.userId, userId))
      return row?.id ?? 0
    },

    /** Whose notification `id` is, if any. */
    async ownerOf(id: number): Promise<number | undefined> {
      const [row] = await db
        .select({ userId: notifications.userId })
        .from(notifications)
        .where(eq(notifications.id, id))
      return row?.userId
    },

    /** A numbered page, newest first, and how many match in all. */
    async page(query: NotificationQuery, page: PageRequest) {
      const [rows, [counted]] = await Promise.all([
        db
          .select()
          .from(notifications)
          .where(matching(query))
          .orderBy(desc(notifications.id))
          .limit(page.limit)
          .offset(offsetOf(page)),
        db.select({ total: count() }).from(notifications).where(matching(query)),
      ])
      return { rows, total: counted?.total ?? 0 }
    },

    /** The newest `limit`, older than `beforeId` when given. */
    newest(query: NotificationQuery, { limit, beforeId }: { limit: number; beforeId?: number }) {
      return db
        .select()
        .from(notifications)
        .where(matching(query, beforeId === undefined ? undefined : lt(notifications.id, beforeId)))
        .orderBy(desc(notifications.id))
        .limit(limit)
    },

    /** Marks one of the user's notifications read; undefined when the user has none with that id. */
    async markRead(userId: number, id: number): Promise<NotificationRow | undefined> {
      const [row] = await db
        .update(notifications)
        .set({ read: true })
        .where(and(eq(notifications.id, id), eq(notifications.userId, userId)))
        .returning()
      return row
    },
  }
}

export type NotificationsRepository = ReturnType<typeof createNotificationsRepository>
