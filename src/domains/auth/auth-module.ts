import { createSecretBox } from '../../platform/secret-box.js'
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
import { createTwoFactorHandlers } from './two-factor-handlers.js'
import { createTwoFactorRepository } from './two-factor-repository.js'
import { createTwoFactorService } from './two-factor-service.js'

/** The name authenticator apps show beside the account's email. */
const TOTP_ISSUER = 'Catalog and chat service'

/**
 * Login (with a second factor where it is on), refresh-token rotation, logout, two-factor
 * and the account's credentials (password change and reset, email verification); its
 * sessions service serves other domains, and its sign-up hook queues the verification email.
 */
export function createAuthModule(
  {
    database,
    config,
    accessTokens,
    deviceTokens,
    sessionAnnouncements,
  }: Pick<
    Infrastructure,
    'database' | 'config' | 'accessTokens' | 'deviceTokens' | 'sessionAnnouncements'
  >,
  { passwords, outbox }: { passwords: Passwords; outbox: Pick<EmailsService, 'queue' | 'wake'> },
) {
  const users = createUsersRepository(database.db)
  const twoFactor = createTwoFactorService({
    db: database.db,
    repository: createTwoFactorRepository(database.db),
    box: createSecretBox(config.dataEncryptionKey, 'totp-secret'),
    issuer: TOTP_ISSUER,
  })
  const auth = createAuthService({
    db: database.db,
    users,
    refreshTokens: createRefreshTokensRepository(database.db),
    accessTokens,
    deviceTokens,
    announcements: sessionAnnouncements,
    refreshTokenTtlSeconds: config.auth.refreshTokenTtlSeconds,
    passwords,
    twoFactor,
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
    handlers: {
      ...createAuthHandlers(auth),
      ...createTwoFactorHandlers(twoFactor),
      ...createCredentialsHandlers(credentials),
    },
    sessions: auth,
    onSignedUp: credentials.onSignedUp,
  }
}
