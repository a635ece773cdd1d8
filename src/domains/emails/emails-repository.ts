import { and, eq, sql } from 'drizzle-orm'
import type { Database, Executor } from '../../db/database.js'
import { type EmailRow, emails } from '../../db/schema.js'

export interface NewEmail {
  recipient: string
  subject: string
  text: string
}

/** A claimed email: which attempt this is identifies the claim in later updates. */
export type ClaimedEmail = EmailRow

export function createEmailsRepository(db: Database) {
  /** Updates an email only while the claim that `attempt` names still holds it. */
  const whileClaimed = (email: ClaimedEmail) =>
    and(eq(emails.id, email.id), eq(emails.status, 'sending'), eq(emails.attempts, email.attempts))

  return {
    async insert(email: NewEmail, executor: Executor = db): Promise<EmailRow> {
      const [row] = await executor.insert(emails).values(email).returning()
      if (!row) throw new Error('INSERT … RETURNING gave no row')
      return row
    },

    async find(id: number): Promise<EmailRow | undefined> {
      const [row] = await db.select().from(emails).where(eq(emails.id, id))
      return row
    },

    /**
     * Up to `limit` due emails, marked `sending` for `leaseMs` with their attempt counted,
     * in one statement. Rows another instance is claiming are skipped, not waited for; an
     * email whose lease ran out (its instance died mid-send) is due again.
     */
    async claimDue(limit: number, leaseMs: number): Promise<ClaimedEmail[]> {
      const due = db
        .select({ id: emails.id })
        .from(emails)
        .where(
          sql`(${emails.status} = 'queued' and ${emails.nextAttemptAt} <= now())
            or (${emails.status} = 'sending' and ${emails.leaseEndsAt} < now())`,
        )
        .orderBy(emails.nextAttemptAt, emails.id)
        .limit(limit)
        .for('update', { skipLocked: true })
      return db
        .update(emails)
        .set({
          status: 'sending',
          attempts: sql`${emails.attempts} + 1`,
          leaseEndsAt: sql`now() + ${leaseMs} * interval '1 millisecond'`,
        })
        .where(sql`${emails.id} in ${due}`)
        .returning()
    },

    async markSent(email: ClaimedEmail): Promise<void> {
      await db
        .update(emails)
        .set({ status: 'sent', sentAt: sql`now()`, leaseEndsAt: null })
        .where(whileClaimed(email))
    },

    async retryLater(email: ClaimedEmail, error: string, delayMs: number): Promise<void> {
      await db
        .update(emails)
        .set({
          status: 'queued',
          lastError: error,
          leaseEndsAt: null,
          nextAttemptAt: sql`now() + ${delayMs} * interval '1 millisecond'`,
        })
        .where(whileClaimed(email))
    },

    async markFailed(email: ClaimedEmail, error: string): Promise<void> {
      await db
        .update(emails)
        .set({ status: 'failed', lastError: error, leaseEndsAt: null })
        .where(whileClaimed(email))
    },
  }
}

export type EmailsRepository = ReturnType<typeof createEmailsRepository>
