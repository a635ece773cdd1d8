import { and, desc, eq, lt, type SQL } from 'drizzle-orm'
import type { Database, Executor } from '../../db/client.js'
import { type MessageRow, messages } from '../../db/schema.js'

export type NewMessage = Pick<typeof messages.$inferInsert, 'chatId' | 'text' | 'author'>

export interface MessageQuery {
  chatId?: string | undefined
  /** Only messages with a smaller id. */
  beforeId?: number | undefined
  limit: number
}

export function createMessagesRepository(db: Database) {
  return {
    async insert(message: NewMessage, executor: Executor = db): Promise<MessageRow> {
      const [row] = await executor.insert(messages).values(message).returning()
      if (!row) throw new Error('INSERT … RETURNING gave no row')
      return row
    },

    /** The newest `limit` matching messages, newest first. */
    newest({ chatId, beforeId, limit }: MessageQuery, executor: Executor = db) {
      const conditions: SQL[] = []
      if (chatId !== undefined) conditions.push(eq(messages.chatId, chatId))
      if (beforeId !== undefined) conditions.push(lt(messages.id, beforeId))
      return executor
        .select()
        .from(messages)
        .where(and(...conditions))
        .orderBy(desc(messages.id))
        .limit(limit)
    },
  }
}

export type MessagesRepository = ReturnType<typeof createMessagesRepository>
