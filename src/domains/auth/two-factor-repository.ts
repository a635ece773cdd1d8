import { and, eq, isNull, lt, or, sql } from 'drizzle-orm'
import type { Database, Executor } from '../../db/database.js'
import { recoveryCodes, users } from '../../db/schema.js'

/** A TOTP step is used only if it is later than the last one used: once per window. */
const laterThanLastStep = (step: number) =>
  or(isNull(users.totpLastStep), lt(users.totpLastStep, step))

/**
 * The two-factor columns of users and the recovery codes. Each write that spends a code
 * is one conditional statement, so of two requests with the same code exactly one
 * finds the row it needs: the check and the record cannot be split by a concurrent one.
 */
export function createTwoFactorRepository(db: Database) {
  return {
    async stateOf(userId: number, executor: Executor = db) {
      const [row] = await executor
        .select({
          email: users.email,
          enabled: users.twoFactorEnabled,
          sealedSecret: users.totpSecret,
        })
        .from(users)
        .where(eq(users.id, userId))
      return row
    },

    /** A new pending secret in place of any earlier one; false once two-factor is on. */
    async savePendingSecret(userId: number, sealedSecret: string, executor: Executor = db) {
      const rows = await executor
        .update(users)
        .set({ totpSecret: sealedSecret, totpLastStep: null })
        .where(and(eq(users.id, userId), eq(users.twoFactorEnabled, false)))
        .returning({ id: users.id })
      return rows.length > 0
    },

    /**
     * Turns two-factor on with the pending secret the code was checked against, spending
     * the code's step; false when the secret changed meanwhile or the step was spent.
     */
    async enable(userId: number, sealedSecret: string, step: number, executor: Executor = db) {
      const rows = await executor
        .update(users)
        .set({ twoFactorEnabled: true, totpLastStep: step })
        .where(
          and(
            eq(users.id, userId),
            eq(users.twoFactorEnabled, false),
            eq(users.totpSecret, sealedSecret),
            laterThanLastStep(step),
          ),
        )
        .returning({ id: users.id })
      return rows.length > 0
    },

    /** Spends a TOTP step of an account with two-factor on; false when it is spent already. */
    async spendStep(userId: number, step: number, executor: Executor = db) {
      const rows = await executor
        .update(users)
        .set({ totpLastStep: step })
        .where(and(eq(users.id, userId), eq(users.twoFactorEnabled, true), laterThanLastStep(step)))
        .returning({ id: users.id })
      return rows.length > 0
    },

    /** Marks an unused recovery code used; false when it is unknown or used already. */
    async spendRecoveryCode(userId: number, codeHash: string, executor: Executor = db) {
      const rows = await executor
        .update(recoveryCodes)
        .set({ usedAt: sql`now()` })
        .where(
          and(
            eq(recoveryCodes.userId, userId),
            eq(recoveryCodes.codeHash, codeHash),
            isNull(recoveryCodes.usedAt),
          ),
        )
        .returning({ userId: recoveryCodes.userId })
      return rows.length > 0
    },

    async replaceRecoveryCodes(userId: number, codeHashes: string[], executor: Executor = db) {
      await executor.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId))
      await executor
        .insert(recoveryCodes)
        .values(codeHashes.map((codeHash) => ({ userId, codeHash })))
    },

    /** Turns two-factor off and forgets its secret, step and recovery codes. */
    async disable(userId: number, executor: Executor = db) {
      await executor
        .update(users)
        .set({ twoFactorEnabled: false, totpSecret: null, totpLastStep: null })
        .where(eq(users.id, userId))
      await executor.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId))
    },
  }
}

export type TwoFactorRepository = ReturnType<typeof createTwoFactorRepository>
