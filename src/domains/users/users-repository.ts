import { eq, inArray, sql } from 'drizzle-orm'
import type { Database, Executor } from '../../db/database.js'
import { type UserRow, users } from '../../db/schema.js'

export type NewUser = Pick<
  typeof users.$inferInsert,
  'name' | 'email' | 'passwordHash' | 'age' | 'role'
>

const emailKey = (email: string) => sql`lower(${users.email}) = lower(${email})`

export function createUsersRepository(db: Database) {
  return {
    async insert(user: NewUser, executor: Executor = db): Promise<UserRow> {
      const [row] = await executor.insert(users).values(user).returning()
      if (!row) throw new Error('INSERT … RETURNING gave no row')
      return row
    },

    async findById(id: number, executor: Executor = db): Promise<UserRow | undefined> {
      const [row] = await executor.select().from(users).where(eq(users.id, id))
      return row
    },

    /** The account's session version; undefined when there is no such account. */
    async sessionVersionOf(id: number): Promise<number | undefined> {
      const [row] = await db
        .select({ sessionVersion: users.sessionVersion })
        .from(users)
        .where(eq(users.id, id))
      return row?.sessionVersion
    },

    /** Raises the account's session version: undefined when there is no such account. */
    async raiseSessionVersion(id: number, executor: Executor = db): Promise<number | undefined> {
      const [row] = await executor
        .update(users)
        .set({ sessionVersion: sql`${users.sessionVersion} + 1` })
        .where(eq(users.id, id))
        .returning({ sessionVersion: users.sessionVersion })
      return row?.sessionVersion
    },

    findByIds(ids: readonly number[]): Promise<UserRow[]> {
      return db
        .select()
        .from(users)
        .where(inArray(users.id, [...ids]))
    },

    /** Emails are unique regardless of case. */
    async findByEmail(email: string, executor: Executor = db): Promise<UserRow | undefined> {
      const [row] = await executor.select().from(users).where(emailKey(email))
      return row
    },

    async hasAdmin(executor: Executor = db): Promise<boolean> {
      const [row] = await executor
        .select({ id: users.id })
        .from(users)
        .where(eq(users.role, 'admin'))
        .limit(1)
      return row !== undefined
    },

    /** Inserts the user unless its email is taken; undefined when it was. */
    async insertIfAbsent(user: NewUser, executor: Executor = db): Promise<UserRow | undefined> {
      const [row] = await executor.insert(users).values(user).onConflictDoNothing().returning()
      return row
    },

    async setCredentials(
      id: number,
      credentials: Pick<UserRow, 'passwordHash' | 'role'>,
      executor: Executor = db,
    ): Promise<void> {
      await executor.update(users).set(credentials).where(eq(users.id, id))
    },
  }
}

export type UsersRepository = ReturnType<typeof createUsersRepository>
