import { and, desc, eq, lt, type SQL, sql } from 'drizzle-orm'
import { type Database, rowsOf } from '../../db/client.js'
import { type MessageRow, messages, outbox } from '../../db/schema.js'
import type { Topic } from '../../platform/events.js'
import type { PendingEvent } from '../../platform/outbox.js'
import type { MessageAddedEvent } from './chat-topics.js'

export type NewMessage = Pick<typeof messages.$inferInsert, 'chatId' | 'text' | 'author'>

export interface MessageQuery {
  chatId?: string | undefined
  /** Only messages with a smaller id. */
  beforeId?: number | undefined
  limit: number
}

export function createMessagesRepository(db: Database) {
  const newestOfAll = prepareNewest(db, undefined)
  const newestOfChat = prepareNewest(db, eq(messages.chatId, sql.placeholder('chatId')))
  return {
    /**
     * Stores a message and its messageAdded event for the outbox in one statement (so
     * both or neither, and one round trip instead of a transaction's four); the event
     * is the message as subscribers receive it, and as the sender is answered.
     */
    async insertWithEvent(
      { chatId, text, author }: NewMessage,
      topic: Topic<MessageAddedEvent>,
    ): Promise<PendingEvent<MessageAddedEvent>> {
      const result = await db.execute(sql`
        with message as (
          insert into ${messages} (chat_id, text, author) values (${chatId}, ${text}, ${author})
          returning id, chat_id, text, author, created_at
        )
        insert into ${outbox} (topic, payload)
        select ${topic}, jsonb_build_object('messageAdded', jsonb_build_object(
          'id', id, 'chatId', chat_id, 'text', text, 'author', author, 'createdAt', created_at))
        from message
        returning id, payload`)
      const [row] = rowsOf<{ id: string | number; payload: MessageAddedEvent }>(result)
      if (!row) throw new Error('INSERT … RETURNING gave no row')
      return { id: Number(row.id), topic, payload: row.payload }
    },

    /** The newest `limit` matching messages, newest first. */
    newest({ chatId, beforeId, limit }: MessageQuery): Promise<MessageRow[]> {
      const statement = chatId === undefined ? newestOfAll : newestOfChat
      return statement[beforeId === undefined ? 'fromNewest' : 'beforeId'].execute({
        chatId,
        beforeId,
        limit,
      })
    },
  }
}

/**
 * The four shapes of the list, each prepared once: a statement that only knew at run
 * time whether to filter would plan badly once Postgres kept a generic plan for it.
 */
function prepareNewest(db: Database, chat: SQL | undefined) {
  const prepare = (before: SQL | undefined, name: string) =>
    db
      .select()
      .from(messages)
      .where(and(chat, before))
      .orderBy(desc(messages.id))
      .limit(sql.placeholder('limit'))
      .prepare(name)
  const suffix = chat ? 'of_chat' : 'of_all'
  return {
    fromNewest: prepare(undefined, `messages_newest_${suffix}`),
    beforeId: prepare(lt(messages.id, sql.placeholder('beforeId')), `messages_before_${suffix}`),
  }
}

export type MessagesRepository = ReturnType<typeof createMessagesRepository>
