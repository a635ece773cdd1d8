import { count, desc, eq, ilike, inArray, or, type SQL, sql } from 'drizzle-orm'
import type { Database, Executor } from '../../db/database.js'
import { containing } from '../../db/like-pattern.js'
import { deletedUsers, type UserRow, users } from '../../db/schema.js'
import { offsetOf, type PageRequest } from '../../platform/pagination.js'

export type NewUser = Pick<
  typeof users.$inferInsert,
  'name' | 'email' | 'passwordHash' | 'age' | 'role'
>

/** What an account's own changes may set (PATCH /users/{id}). */
export type UserChanges = Partial<Pick<UserRow, 'name' | 'age' | 'phoneNumber' | 'role'>>

const emailKey = (email: string) => sql`lower(${users.email}) = lower(${email})`
const newestFirst = [desc(users.createdAt), desc(users.id)]
const matching = (search: string | undefined): SQL | undefined =>
  search === undefined
    ? undefined
    : or(ilike(users.name, containing(search)), ilike(users.email, containing(search)))

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

    /** A numbered page of the accounts whose name or email contains `search`, newest first. */
    async page(search: string | undefined, page: PageRequest) {
      const where = matching(search)
      const [rows, [counted]] = await Promise.all([
        db
          .select()
          .from(users)
          .where(where)
          .orderBy(...newestFirst)
          .limit(page.limit)
          .offset(offsetOf(page)),
        db.select({ total: count() }).from(users).where(where),
      ])
      return { rows, total: counted?.total ?? 0 }
    },

    /** The account, locked until the transaction ends: its changes are made one at a time. */
    async lock(id: number, executor: Executor): Promise<UserRow | undefined> {
      const [row] = await executor.select().from(users).where(eq(users.id, id)).for('update')
      return row
    },

    /**
     * How many admins there are, their rows locked in id order until the transaction
     * ends: two admins demoting (or deleting) each other at once queue here, and the
     * second counts one.
     */
    async lockAdmins(executor: Executor): Promise<number> {
      const rows = await executor
        .select({ id: users.id })
        .from(users)
        .where(eq(users.role, 'admin'))
        .orderBy(users.id)
        .for('update')
      return rows.length
    },

    async update(id: number, changes: UserChanges, executor: Executor = db) {
      const [row] = await executor.update(users).set(changes).where(eq(users.id, id)).returning()
      return row
    },

    /** Deletes the account and keeps its id, so that it answers 410 from then on. */
    async delete(id: number, executor: Executor): Promise<void> {
      await executor.insert(deletedUsers).values({ id })
      await executor.delete(users).where(eq(users.id, id))
    },

    /** Whether the id was an account's, deleted since. */
    async wasDeleted(id: number, executor: Executor = db): Promise<boolean> {
      const [row] = await executor
        .select({ id: deletedUsers.id })
        .from(deletedUsers)
        .where(eq(deletedUsers.id, id))
      return row !== undefined
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
