import type { Infrastructure } from '../module.js'
import { createUserHandlers } from './users-handlers.js'
import { createUsersRepository } from './users-repository.js'
import { createUsersService, type Sessions } from './users-service.js'

/** Accounts: sign-up, and the admin the configuration asks for, made sure of at start. */
export function createUsersModule(
  { database, config, log }: Pick<Infrastructure, 'database' | 'config' | 'log'>,
  { sessions }: { sessions: Sessions },
) {
  const users = createUsersService({
    db: database.db,
    users: createUsersRepository(database.db),
    sessions,
  })
  return {
    name: 'users',
    handlers: createUserHandlers(users),
    /** Who an account is, for the domains that show it (a message's author). */
    accounts: { nameOf: users.nameOf },
    start: () => users.ensureAdmin(config.auth.admin, log),
  }
}
