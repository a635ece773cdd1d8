import { createHash, randomBytes, randomUUID } from 'node:crypto'
import type { Database, Executor } from '../../db/database.js'
import type { UserRow } from '../../db/schema.js'
import { unauthenticated } from '../../platform/errors.js'
import type { AccessTokens, Principal } from '../../platform/infrastructure/access-tokens.js'
import type { DeviceTokens } from '../../platform/infrastructure/device-tokens.js'
import type { PendingEvent } from '../../platform/infrastructure/outbox.js'
import type {
  SessionAnnouncements,
  SessionsEndedEvent,
} from '../../platform/infrastructure/session-announcements.js'
import type { Passwords } from '../users/password.js'
import type { UsersRepository } from '../users/users-repository.js'
import type { RefreshTokensRepository } from './refresh-tokens-repository.js'
import type { TwoFactorService } from './two-factor-service.js'

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

/** A committed end of every session of an account, to announce to every instance. */
export type SessionsEnded = PendingEvent<SessionsEndedEvent>

interface AuthServiceDependencies {
  db: Database
  users: Pick<UsersRepository, 'findByEmail' | 'findById' | 'raiseSessionVersion'>
  refreshTokens: RefreshTokensRepository
  accessTokens: AccessTokens
  deviceTokens: DeviceTokens
  announcements: Pick<SessionAnnouncements, 'record' | 'announce'>
  refreshTokenTtlSeconds: number
  passwords: Passwords
  /** The second step of a login to an account with two-factor on. */
  twoFactor: Pick<TwoFactorService, 'checkLogin'>
}

/** How a token a client holds is stored: its SHA-256, never itself. */
export const hashToken = (token: string) => createHash('sha256').update(token).digest('hex')
const invalidRefreshToken = () =>
  unauthenticated('The refresh token is invalid, expired or revoked')

export function createAuthService(deps: AuthServiceDependencies) {
  const { db, users, refreshTokens, accessTokens, deviceTokens, passwords } = deps
  const { announcements, twoFactor } = deps

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
      accessToken: accessTokens.sign({
        userId: user.id,
        role: user.role,
        sessionVersion: user.sessionVersion,
      }),
      refreshToken,
      tokenType: 'Bearer',
      expiresIn: accessTokens.ttlSeconds,
    }
  }

  /**
   * Ends every session of a user in the caller's transaction, as a change of its role
   * or password, or its deletion, must: its refresh tokens are revoked and its session
   * version raised, which refuses every access token issued before. Pass the result to
   * `announce` once the transaction has committed; a pair issued after this, from the
   * user row read again in the transaction, belongs to the new version.
   */
  async function endSessionsOf(userId: number, executor: Executor): Promise<SessionsEnded> {
    await refreshTokens.revokeEveryFamilyOf(userId, executor)
    const sessionVersion = await users.raiseSessionVersion(userId, executor)
    if (sessionVersion === undefined) throw new Error(`No user has the id ${userId}`)
    return announcements.record(executor, { userId, sessionVersion })
  }

  return {
    async login(email: string, password: string, otp?: string): Promise<LoginTokens> {
      const user = await users.findByEmail(email)
      // An unknown email costs a hash too, so timing does not reveal who has an account.
      const valid = await passwords.verifyOrDecoy(password, user?.passwordHash)
      if (!user || !valid) throw unauthenticated('The email or password is wrong')
      await twoFactor.checkLogin(user, otp)
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

    endSessionsOf,

    /** Every instance refuses the ended sessions' tokens and closes their sockets. */
    announce: (ended: SessionsEnded): Promise<void> => announcements.announce(ended),

    /** Ends every session of the caller (logout-all). */
    async endEverySession(userId: number): Promise<void> {
      const ended = await db.transaction((tx) => endSessionsOf(userId, tx))
      await announcements.announce(ended)
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
