import { and, eq, gt, isNull, sql } from 'drizzle-orm'
import type { Database, Executor } from '../../db/database.js'
import { accountTokens, users } from '../../db/schema.js'

export type AccountTokenPurpose = (typeof accountTokens.$inferSelect)['purpose']

/** An email to queue: its recipient is the account's address, read by the statement. */
export interface AccountEmail {
  subject: string
  text: string
}

/**
 * The emailed tokens of accounts (password reset, email verification), stored as their
 * SHA-256 only, and the account changes they allow.
 */
export function createAccountTokensRepository(db: Database) {
  return {
    async insert(
      token: {
        tokenHash: string
        userId: number
        purpose: AccountTokenPurpose
        ttlSeconds: number
      },
      executor: Executor = db,
    ): Promise<void> {
      const { ttlSeconds, ...fields } = token
      await executor
        .insert(accountTokens)
        .values({ ...fields, expiresAt: sql`now() + ${ttlSeconds} * interval '1 second'` })
    },

    /**
     * For the account with this address, if any, stores a reset token and queues its
     * email to the outbox the email worker drains: one statement, the same one whether an
     * account has the address or not, so neither answer comes sooner
     * (docs/decisions/password-reset.md).
     */
    async issueReset(
      email: string,
      token: { tokenHash: string; ttlSeconds: number },
      message: AccountEmail,
      executor: Executor = db,
    ): Promise<void> {
      await executor.execute(sql`
        with account as (
          select id, email from users where lower(email) = lower(${email})
        ), token as (
          insert into account_tokens (token_hash, user_id, purpose, expires_at)
          select ${token.tokenHash}, id, 'password-reset',
            now() + ${token.ttlSeconds} * interval '1 second'
          from account
        )
        insert into emails (recipient, subject, text)
        select email, ${message.subject}, ${message.text} from account`)
    },

    /**
     * Uses a token: the account it was made for, once, while it is unexpired and unused
     * and was made for this purpose; undefined otherwise. Of two concurrent uses, the
     * second waits for the first's row lock and then finds the token used.
     */
    async use(
      tokenHash: string,
      purpose: AccountTokenPurpose,
      executor: Executor = db,
    ): Promise<number | undefined> {
      const [row] = await executor
        .update(accountTokens)
        .set({ usedAt: sql`now()` })
        .where(
          and(
            eq(accountTokens.tokenHash, tokenHash),
            eq(accountTokens.purpose, purpose),
            isNull(accountTokens.usedAt),
            gt(accountTokens.expiresAt, sql`now()`),
          ),
        )
        .returning({ userId: accountTokens.userId })
      return row?.userId
    },

    /** Retires the account's unused tokens of this purpose (a reset leaves no other usable). */
    async retireUnused(
      userId: number,
      purpose: AccountTokenPurpose,
      executor: Executor = db,
    ): Promise<void> {
      await executor
        .update(accountTokens)
        .set({ usedAt: sql`now()` })
        .where(
          and(
            eq(accountTokens.userId, userId),
            eq(accountTokens.purpose, purpose),
            isNull(accountTokens.usedAt),
          ),
        )
    },

    async setPasswordHash(userId: number, passwordHash: string, executor: Executor = db) {
      await executor.update(users).set({ passwordHash }).where(eq(users.id, userId))
    },

    /** The first verification stands: a later one changes nothing. */
    async markEmailVerified(userId: number, executor: Executor = db) {
      await executor
        .update(users)
        .set({ emailVerifiedAt: sql`coalesce(${users.emailVerifiedAt}, now())` })
        .where(eq(users.id, userId))
    },
  }
}

export type AccountTokensRepository = ReturnType<typeof createAccountTokensRepository>
