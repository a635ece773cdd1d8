import type { Infrastructure } from '../domain-module.js'
import type { Passwords } from '../users/password.js'
import { createUsersRepository } from '../users/users-repository.js'
import { createAuthHandlers } from './auth-handlers.js'
import { createAuthService } from './auth-service.js'
import { createRefreshTokensRepository } from './refresh-tokens-repository.js'

/** Login, refresh-token rotation and logout; its sessions service serves other domains. */
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
  const auth = createAuthService({
    db: database.db,
    users: createUsersRepository(database.db),
    refreshTokens: createRefreshTokensRepository(database.db),
    accessTokens,
    deviceTokens,
    announcements: sessionAnnouncements,
    refreshTokenTtlSeconds: config.auth.refreshTokenTtlSeconds,
    passwords,
  })
  return { name: 'auth', handlers: createAuthHandlers(auth), sessions: auth }
}
