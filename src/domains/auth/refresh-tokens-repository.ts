import { and, eq, isNull, sql } from 'drizzle-orm'
import type { Database, Executor } from '../../db/database.js'
import { type RefreshTokenRow, refreshTokens } from '../../db/schema.js'

export type NewRefreshToken = Pick<
  typeof refreshTokens.$inferInsert,
  'id' | 'familyId' | 'userId' | 'tokenHash' | 'expiresAt'
>

export function createRefreshTokensRepository(db: Database) {
  return {
    async insert(token: NewRefreshToken, executor: Executor = db): Promise<void> {
      await executor.insert(refreshTokens).values(token)
    },

    async findByHash(tokenHash: string, executor: Executor = db) {
      const [row] = await executor
        .select()
        .from(refreshTokens)
        .where(eq(refreshTokens.tokenHash, tokenHash))
      return row as RefreshTokenRow | undefined
    },

    /** Retires one live token; false when it was already retired (a concurrent reuse). */
    async revoke(id: string, executor: Executor = db): Promise<boolean> {
      const rows = await executor
        .update(refreshTokens)
        .set({ revokedAt: sql`now()` })
        .where(and(eq(refreshTokens.id, id), isNull(refreshTokens.revokedAt)))
        .returning({ id: refreshTokens.id })
      return rows.length > 0
    },

    async revokeEveryFamilyOf(userId: number, executor: Executor = db): Promise<void> {
      await executor
        .update(refreshTokens)
        .set({ revokedAt: sql`now()` })
        .where(and(eq(refreshTokens.userId, userId), isNull(refreshTokens.revokedAt)))
    },

    async revokeFamily(familyId: string, executor: Executor = db): Promise<void> {
      await executor
        .update(refreshTokens)
        .set({ revokedAt: sql`now()` })
        .where(and(eq(refreshTokens.familyId, familyId), isNull(refreshTokens.revokedAt)))
    },
  }
}

export type RefreshTokensRepository = ReturnType<typeof createRefreshTokensRepository>
