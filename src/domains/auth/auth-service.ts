import { createHash, randomBytes, randomUUID } from 'node:crypto'
import type { Database, Executor } from '../../db/database.js'
import type { UserRow } from '../../db/schema.js'
import { unauthenticated } from '../../platform/errors.js'
import type { AccessTokens, Principal } from '../../platform/infrastructure/access-tokens.js'
import type { DeviceTokens } from '../../platform/infrastructure/device-tokens.js'
import type { Passwords } from '../users/password.js'
import type { UsersRepository } from '../users/users-repository.js'
import type { RefreshTokensRepository } from './refresh-tokens-repository.js'

export interface TokenPair {
  accessToken: string
  refreshToken: string
  tokenType: 'Bearer'
  expiresIn: number
}

/** A login's tokens: its pair, and the device token of the client that logged in. */
export interface LoginTokens extends TokenPair {
  deviceToken: string
}

interface AuthServiceDependencies {
  db: Database
  users: Pick<UsersRepository, 'findByEmail' | 'findById'>
  refreshTokens: RefreshTokensRepository
  accessTokens: AccessTokens
  deviceTokens: DeviceTokens
  refreshTokenTtlSeconds: number
  passwords: Passwords
}

/** How a token a client holds is stored: its SHA-256, never itself. */
export const hashToken = (token: string) => createHash('sha256').update(token).digest('hex')
const invalidRefreshToken = () =>
  unauthenticated('The refresh token is invalid, expired or revoked')

export function createAuthService(deps: AuthServiceDependencies) {
  const { db, users, refreshTokens, accessTokens, deviceTokens, passwords } = deps

  /** A new access token and refresh token; the refresh token joins the given session. */
  async function issuePair(
    user: UserRow,
    familyId: string,
    executor: Executor = db,
  ): Promise<TokenPair> {
    const refreshToken = randomBytes(32).toString('base64url')
    await refreshTokens.insert(
      {
        id: randomUUID(),
        familyId,
        userId: user.id,
        tokenHash: hashToken(refreshToken),
        expiresAt: new Date(Date.now() + deps.refreshTokenTtlSeconds * 1000),
      },
      executor,
    )
    return {
      accessToken: accessTokens.sign({ userId: user.id, role: user.role }),
      refreshToken,
      tokenType: 'Bearer',
      expiresIn: accessTokens.ttlSeconds,
    }
  }

  return {
    async login(email: string, password: string): Promise<LoginTokens> {
      const user = await users.findByEmail(email)
      // An unknown email costs a hash too, so timing does not reveal who has an account.
      const valid = await passwords.verifyOrDecoy(password, user?.passwordHash)
      if (!user || !valid) throw unauthenticated('The email or password is wrong')
      const pair = await issuePair(user, randomUUID())
      // Bound to the account as the login budgets name it: its email, in lower case.
      return { ...pair, deviceToken: deviceTokens.issue(user.email.toLowerCase()) }
    },

    /**
     * Rotation: the presented token is retired and a new one issued in its session.
     * A retired token presented again means it was stolen or replayed, so the whole
     * session is revoked; that revocation stands even though the request fails.
     */
    async refresh(refreshToken: string): Promise<TokenPair> {
      const stored = await refreshTokens.findByHash(hashToken(refreshToken))
      if (!stored) throw invalidRefreshToken()
      if (stored.expiresAt.getTime() <= Date.now()) throw invalidRefreshToken()
      const user = await users.findById(stored.userId)
      const pair = await db.transaction(async (tx) => {
        if (!user || !(await refreshTokens.revoke(stored.id, tx))) return undefined
        return issuePair(user, stored.familyId, tx)
      })
      if (pair) return pair
      await refreshTokens.revokeFamily(stored.familyId)
      throw invalidRefreshToken()
    },

    /** A new session for the account as `user` has it, read in the caller's transaction. */
    startSession: (user: UserRow, executor: Executor = db): Promise<TokenPair> =>
      issuePair(user, randomUUID(), executor),

    /** Ends every session of a user, as a change of its role or password must. */
    endSessionsOf(userId: number, executor: Executor = db): Promise<void> {
      return refreshTokens.revokeEveryFamilyOf(userId, executor)
    },

    /** Ends the caller's session that the refresh token belongs to. */
    async logout(principal: Principal, refreshToken: string): Promise<void> {
      const stored = await refreshTokens.findByHash(hashToken(refreshToken))
      if (!stored || stored.userId !== principal.userId) throw invalidRefreshToken()
      await refreshTokens.revokeFamily(stored.familyId)
    },
  }
}

export type AuthService = ReturnType<typeof createAuthService>
