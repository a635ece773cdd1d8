import { createSecretBox } from '../../platform/secret-box.js'
import type { Infrastructure } from '../domain-module.js'
import type { Passwords } from '../users/password.js'
import { createUsersRepository } from '../users/users-repository.js'
import { createAuthHandlers } from './auth-handlers.js'
import { createAuthService } from './auth-service.js'
import { createRefreshTokensRepository } from './refresh-tokens-repository.js'
import { createTwoFactorHandlers } from './two-factor-handlers.js'
import { createTwoFactorRepository } from './two-factor-repository.js'
import { createTwoFactorService } from './two-factor-service.js'

/** The name authenticator apps show beside the account's email. */
const TOTP_ISSUER = 'Catalog and chat service'

/**
 * Login (with a second factor where it is on), refresh-token rotation, logout and
 * two-factor; its sessions service serves other domains.
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
  { passwords }: { passwords: Passwords },
) {
  const twoFactor = createTwoFactorService({
    db: database.db,
    repository: createTwoFactorRepository(database.db),
    box: createSecretBox(config.dataEncryptionKey, 'totp-secret'),
    issuer: TOTP_ISSUER,
  })
  const auth = createAuthService({
    db: database.db,
    users: createUsersRepository(database.db),
    refreshTokens: createRefreshTokensRepository(database.db),
    accessTokens,
    deviceTokens,
    announcements: sessionAnnouncements,
    refreshTokenTtlSeconds: config.auth.refreshTokenTtlSeconds,
    passwords,
    twoFactor,
  })
  return {
    name: 'auth',
    handlers: { ...createAuthHandlers(auth), ...createTwoFactorHandlers(twoFactor) },
    sessions: auth,
  }
}
