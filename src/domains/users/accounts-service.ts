import type { Database, Executor } from '../../db/database.js'
import type { UserRow } from '../../db/schema.js'
import { assertValidFields, conflict, forbidden } from '../../platform/errors.js'
import type { Principal } from '../../platform/infrastructure/access-tokens.js'
import { readableTextProblem } from '../../platform/input-rules.js'
import { type PageRequest, pagePagination } from '../../platform/pagination.js'
import type { UserChanges, UsersRepository } from './users-repository.js'
import { missingUser, type Sessions } from './users-service.js'

interface Dependencies {
  db: Database
  users: UsersRepository
  sessions: Sessions
}

const lastAdmin = (what: string) =>
  conflict(`${what} would leave the service without an admin: make another admin first`)

/** A user changes and deletes their own account; an admin any, and lists them all. */
export function createAccountsService({ db, users, sessions }: Dependencies) {
  function assertMayChange(caller: Principal, id: number, changes?: UserChanges): void {
    if (caller.role === 'admin') return
    if (caller.userId !== id)
      throw forbidden("Only the user themself or an admin may change a user's account")
    if (changes?.role !== undefined) throw forbidden('Only an admin may change a role')
  }

  /**
   * The account, locked for the change; refused when the change `demotes` it and it is
   * the last admin. The admins are locked first, in one order, so that two admins
   * demoting each other at once queue, and the second counts one admin.
   */
  async function lockForChange(
    tx: Executor,
    id: number,
    demotes: boolean,
    what: string,
  ): Promise<UserRow> {
    const admins = demotes ? await users.lockAdmins(tx) : undefined
    const row = (await users.lock(id, tx)) ?? (await missingUser(users, id, tx))
    if (row.role === 'admin' && admins !== undefined && admins <= 1) throw lastAdmin(what)
    return row
  }

  return {
    /** Every account whose name or email contains `search`, newest first. */
    async list(search: string | undefined, page: PageRequest) {
      const { rows, total } = await users.page(search, page)
      return { items: rows, pagination: pagePagination(page, total) }
    },

    /** Changes what the caller may change; a change of role ends the account's sessions. */
    async update(caller: Principal, id: number, changes: UserChanges): Promise<UserRow> {
      // The name's rules are its schema's, checked as the schema is: before who may change it.
      assertValidFields({
        name: changes.name === undefined ? undefined : readableTextProblem(changes.name),
      })
      assertMayChange(caller, id, changes)
      const { after, ended } = await db.transaction(async (tx) => {
        const demotes = changes.role === 'user'
        const before = await lockForChange(tx, id, demotes, 'Making the last admin a user')
        const changed = await users.update(id, changes, tx)
        if (!changed) throw new Error(`user ${id} vanished while it was locked`)
        const roleChanged = changed.role !== before.role
        return { after: changed, ended: roleChanged ? await sessions.endSessionsOf(id, tx) : null }
      })
      if (ended) await sessions.announce(ended)
      return after
    },

    /**
     * Deletes the account in one transaction: its sessions end, its id is kept as deleted
     * (410 from then on), and its rows go; what hangs on it by a foreign key goes by
     * cascade, but its orders, which keep its id.
     */
    async delete(caller: Principal, id: number): Promise<void> {
      assertMayChange(caller, id)
      const ended = await db.transaction(async (tx) => {
        await lockForChange(tx, id, true, 'Deleting the last admin')
        const sessionsEnded = await sessions.endSessionsOf(id, tx)
        await users.delete(id, tx)
        return sessionsEnded
      })
      await sessions.announce(ended)
    },
  }
}

export type AccountsService = ReturnType<typeof createAccountsService>
