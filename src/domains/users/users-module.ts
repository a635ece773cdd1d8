import type { Infrastructure } from '../domain-module.js'
import { createAccountsService } from './accounts-service.js'
import type { Passwords } from './password.js'
import { createPostHandlers } from './posts-handlers.js'
import { createPostsRepository } from './posts-repository.js'
import { createPostsService } from './posts-service.js'
import { createUserHandlers } from './users-handlers.js'
import { createUsersRepository } from './users-repository.js'
import { createUserLoaders, createUserResolvers } from './users-resolvers.js'
import { createUsersService, type OnSignedUp, type Sessions } from './users-service.js'

/**
 * Accounts and their posts: sign-up, profiles, changes and deletion, the admins' list,
 * and the admin the configuration asks for, made sure of at start.
 */
export function createUsersModule(
  { database, config, log }: Pick<Infrastructure, 'database' | 'config' | 'log'>,
  {
    sessions,
    passwords,
    onSignedUp,
  }: { sessions: Sessions; passwords: Passwords; onSignedUp: OnSignedUp },
) {
  const repository = createUsersRepository(database.db)
  const users = createUsersService({
    db: database.db,
    users: repository,
    sessions,
    passwords,
    onSignedUp,
  })
  const accounts = createAccountsService({ db: database.db, users: repository, sessions })
  const posts = createPostsService({
    posts: createPostsRepository(database.db),
    users: repository,
  })
  return {
    name: 'users',
    handlers: { ...createUserHandlers(users, accounts), ...createPostHandlers(posts) },
    resolvers: createUserResolvers(users),
    loaders: createUserLoaders(posts),
    /** Who an account is, for the domains that show it (a message's author, a status). */
    accounts: { nameOf: users.nameOf, find: users.find },
    start: () => users.ensureAdmin(config.auth.admin, log),
  }
}
