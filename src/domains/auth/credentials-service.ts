import { randomBytes } from 'node:crypto'
import type { Config } from '../../config.js'
import type { Database, Executor } from '../../db/database.js'
import type { UserRow } from '../../db/schema.js'
import { badRequest, unauthenticated } from '../../platform/errors.js'
import type { Principal } from '../../platform/infrastructure/access-tokens.js'
import type { EmailsService } from '../emails/emails-service.js'
import type { Passwords } from '../users/password.js'
import type { UsersRepository } from '../users/users-repository.js'
import type { AccountTokensRepository } from './account-tokens-repository.js'
import { type AuthService, hashToken, type TokenPair } from './auth-service.js'

interface Dependencies {
  db: Database
  tokens: AccountTokensRepository
  users: Pick<UsersRepository, 'findById'>
  passwords: Passwords
  sessions: Pick<AuthService, 'endSessionsOf' | 'announce' | 'startSession' | 'endEverySession'>
  outbox: Pick<EmailsService, 'queue' | 'wake'>
  links: Config['accountEmails']
}

/** 32 random bytes: what a link carries; only its hash is stored. */
const newToken = () => {
  const token = randomBytes(32).toString('base64url')
  return { token, tokenHash: hashToken(token) }
}

const invalidToken = () => badRequest('The token is unknown, used or expired')

/**
 * The credentials of an account beside login: changing the password, resetting a
 * forgotten one with an emailed token, verifying the email address, and ending every
 * session. Each change that must end the account's sessions ends them in its own
 * transaction.
 */
export function createCredentialsService(deps: Dependencies) {
  const { db, tokens, users, passwords, sessions, outbox, links } = deps
  const { passwordReset, emailVerification } = links

  const resetEmail = (token: string) => ({
    subject: 'Reset your password',
    text: [
      'Someone asked to reset the password of your account. To choose a new one, open',
      `this link within ${Math.round(passwordReset.ttlSeconds / 60)} minutes:`,
      '',
      `${passwordReset.url}?token=${token}`,
      '',
      'If it was not you, ignore this email: your password stays as it is.',
    ].join('\n'),
  })

  const verificationEmail = (token: string) => ({
    subject: 'Verify your email address',
    text: [
      'Welcome! To confirm that this address is yours, open this link within',
      `${Math.round(emailVerification.ttlSeconds / 3600)} hours:`,
      '',
      `${emailVerification.url}?token=${token}`,
    ].join('\n'),
  })

  return {
    /**
     * A wrong current password changes nothing. Otherwise, in one transaction: the new
     * hash, every session ended, and a new pair signed from the row as it is then.
     */
    async changePassword(
      principal: Principal,
      currentPassword: string,
      newPassword: string,
    ): Promise<TokenPair> {
      const user = await users.findById(principal.userId)
      const valid = await passwords.verifyOrDecoy(currentPassword, user?.passwordHash)
      if (!user || !valid) throw unauthenticated('The current password is wrong')
      const passwordHash = await passwords.hash(newPassword)
      const { pair, ended } = await db.transaction(async (tx) => {
        await tokens.setPasswordHash(user.id, passwordHash, tx)
        const sessionsEnded = await sessions.endSessionsOf(user.id, tx)
        const changed = await users.findById(user.id, tx)
        if (!changed) throw unauthenticated('The account does not exist any more')
        return { pair: await sessions.startSession(changed, tx), ended: sessionsEnded }
      })
      await sessions.announce(ended)
      return pair
    },

    /**
     * The same work whatever the address: a token made and hashed, an email written, one
     * statement that stores both only for an account that has the address, and the
     * worker woken.
     */
    async requestPasswordReset(email: string): Promise<void> {
      const { token, tokenHash } = newToken()
      await tokens.issueReset(
        email,
        { tokenHash, ttlSeconds: passwordReset.ttlSeconds },
        resetEmail(token),
      )
      outbox.wake()
    },

    /**
     * The token is used, the password set, the account's other reset tokens retired and
     * its sessions ended, all or none: an unusable token changes nothing.
     */
    async confirmPasswordReset(token: string, newPassword: string): Promise<void> {
      const passwordHash = await passwords.hash(newPassword)
      const ended = await db.transaction(async (tx) => {
        const userId = await tokens.use(hashToken(token), 'password-reset', tx)
        if (userId === undefined) throw invalidToken()
        await tokens.setPasswordHash(userId, passwordHash, tx)
        await tokens.retireUnused(userId, 'password-reset', tx)
        return sessions.endSessionsOf(userId, tx)
      })
      await sessions.announce(ended)
    },

    async verifyEmail(token: string): Promise<void> {
      await db.transaction(async (tx) => {
        const userId = await tokens.use(hashToken(token), 'verify-email', tx)
        if (userId === undefined) throw invalidToken()
        await tokens.markEmailVerified(userId, tx)
      })
    },

    /** Sign-up's part: the verification email, queued in the transaction that stores the user. */
    async onSignedUp(user: UserRow, tx: Executor): Promise<void> {
      const { token, tokenHash } = newToken()
      await tokens.insert(
        {
          tokenHash,
          userId: user.id,
          purpose: 'verify-email',
          ttlSeconds: emailVerification.ttlSeconds,
        },
        tx,
      )
      await outbox.queue({ to: user.email, ...verificationEmail(token) }, tx)
    },

    logoutAll: (principal: Principal) => sessions.endEverySession(principal.userId),
  }
}

export type CredentialsService = ReturnType<typeof createCredentialsService>
