import type { Infrastructure } from '../domain-module.js'
import type { EmailsService } from '../emails/emails-service.js'
import type { Passwords } from '../users/password.js'
import { createUsersRepository } from '../users/users-repository.js'
import { createAccountTokensRepository } from './account-tokens-repository.js'
import { createAuthHandlers } from './auth-handlers.js'
import { createAuthService } from './auth-service.js'
import { createCredentialsHandlers } from './credentials-handlers.js'
import { createCredentialsService } from './credentials-service.js'
import { createRefreshTokensRepository } from './refresh-tokens-repository.js'

/**
 * Login, refresh-token rotation and logout, and the account's credentials (password
 * change and reset, email verification); its sessions service serves other domains, and
 * its sign-up hook queues the verification email.
 */
export function createAuthModule(
  {
    database,
    config,
    accessTokens,
    deviceTokens,
  }: Pick<Infrastructure, 'database' | 'config' | 'accessTokens' | 'deviceTokens'>,
  { passwords, outbox }: { passwords: Passwords; outbox: Pick<EmailsService, 'queue' | 'wake'> },
) {
  const users = createUsersRepository(database.db)
  const auth = createAuthService({
    db: database.db,
    users,
    refreshTokens: createRefreshTokensRepository(database.db),
    accessTokens,
    deviceTokens,
    refreshTokenTtlSeconds: config.auth.refreshTokenTtlSeconds,
    passwords,
  })
  const credentials = createCredentialsService({
    db: database.db,
    tokens: createAccountTokensRepository(database.db),
    users,
    passwords,
    sessions: auth,
    outbox,
    links: config.accountEmails,
  })
  return {
    name: 'auth',
    handlers: { ...createAuthHandlers(auth), ...createCredentialsHandlers(credentials) },
    sessions: auth,
    onSignedUp: credentials.onSignedUp,
  }
}
