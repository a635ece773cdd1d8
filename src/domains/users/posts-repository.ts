import { and, count, desc, eq, sql } from 'drizzle-orm'
import type { Database } from '../../db/database.js'
import { type PostRow, posts } from '../../db/schema.js'
import { offsetOf, type PageRequest } from '../../platform/pagination.js'

export type NewPost = Pick<typeof posts.$inferInsert, 'userId' | 'title' | 'body'>

const newestFirst = [desc(posts.createdAt), desc(posts.id)]

export function createPostsRepository(db: Database) {
  return {
    async insert(post: NewPost): Promise<PostRow> {
      const [row] = await db.insert(posts).values(post).returning()
      if (!row) throw new Error('INSERT … RETURNING gave no row')
      return row
    },

    /** A numbered page of one user's posts, newest first, and how many they have. */
    async page(userId: number, page: PageRequest) {
      const [rows, [counted]] = await Promise.all([
        db
          .select()
          .from(posts)
          .where(eq(posts.userId, userId))
          .orderBy(...newestFirst)
          .limit(page.limit)
          .offset(offsetOf(page)),
        db.select({ total: count() }).from(posts).where(eq(posts.userId, userId)),
      ])
      return { rows, total: counted?.total ?? 0 }
    },

    /**
     * The newest `limit` posts of each of many users, in one statement: a lateral join
     * reads each user's from the index, however many posts they have in all.
     */
    async newestOf(userIds: readonly number[], limit: number): Promise<PostRow[]> {
      if (userIds.length === 0) return []
      const wanted = sql`unnest(array[${sql.join(
        userIds.map((id) => sql`${id}`),
        sql`, `,
      )}]::int[]) as wanted(user_id)`
      const newest = db
        .select()
        .from(posts)
        .where(eq(posts.userId, sql`wanted.user_id`))
        .orderBy(...newestFirst)
        .limit(limit)
        .as('newest')
      const { id, userId, title, body, createdAt } = newest
      return db
        .select({ id, userId, title, body, createdAt })
        .from(wanted)
        .innerJoinLateral(newest, sql`true`)
    },

    /** One post of one user: undefined when the user has no post of that id. */
    async find(userId: number, postId: number): Promise<PostRow | undefined> {
      const [row] = await db
        .select()
        .from(posts)
        .where(and(eq(posts.id, postId), eq(posts.userId, userId)))
      return row
    },

    /** Whether the user had a post of that id, now deleted. */
    async delete(userId: number, postId: number): Promise<boolean> {
      const deleted = await db
        .delete(posts)
        .where(and(eq(posts.id, postId), eq(posts.userId, userId)))
        .returning({ id: posts.id })
      return deleted.length > 0
    },
  }
}

export type PostsRepository = ReturnType<typeof createPostsRepository>
