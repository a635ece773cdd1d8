import { and, eq, lt, sql } from 'drizzle-orm'
import { type Executor, rowsOf } from '../../db/client.js'
import { isoInstant } from '../../db/iso-instant.js'
import { messages, outbox } from '../../db/schema.js'
import type { Topic } from '../../platform/events.js'
import type { PendingEvent } from '../../platform/outbox.js'
import type { MessageAddedEvent } from './chat-topics.js'

export type NewMessage = Pick<typeof messages.$inferInsert, 'chatId' | 'text' | 'author'>

/** A message as clients receive it, listed or live: its time as ISO 8601 text. */
export interface Message {
  id: number
  chatId: string
  text: string
  author: string
  createdAt: string
}

export interface MessageQuery {
  chatId?: string | undefined
  /** Only messages with a smaller id. */
  beforeId?: number | undefined
  limit: number
}

const messageColumns = sql`${messages.id}, ${messages.chatId} as "chatId", ${messages.text},
  ${messages.author}, ${isoInstant(messages.createdAt)} as "createdAt"`

export function createMessagesRepository(db: Executor) {
  const insertWithEvent = prepareInsertWithEvent(db)
  return {
    /**
     * Stores a message and its messageAdded event for the outbox in one statement (so
     * both or neither, and one round trip instead of a transaction's four); the event
     * is the message as subscribers receive it, and as the sender is answered.
     */
    async insertWithEvent(
      message: NewMessage,
      topic: Topic<MessageAddedEvent>,
    ): Promise<PendingEvent<MessageAddedEvent>> {
      const [row] = await insertWithEvent.execute({ ...message, topic })
      if (!row) throw new Error('INSERT … RETURNING gave no row')
      return { id: Number(row.id), topic, payload: row.payload }
    },

    /** The newest `limit` matching messages, newest first. */
    async newest(query: MessageQuery): Promise<Message[]> {
      return rowsOf<Message>(await db.execute(newestQuery(query)))
    },

    /** The statement behind newest, for EXPLAIN. */
    newestQuery,
  }
}

/**
 * Sent unnamed, so planned for its chat: a generic plan, not knowing the chat, read the
 * primary key backwards and filtered, which for a quiet chat beside a busy one meant
 * reading through the busy chat's messages to find 50; the chat's index reads only them.
 */
function newestQuery({ chatId, beforeId, limit }: MessageQuery) {
  const where = and(
    chatId === undefined ? undefined : eq(messages.chatId, chatId),
    beforeId === undefined ? undefined : lt(messages.id, beforeId),
  )
  return sql`select ${messageColumns} from ${messages}
    ${where ? sql`where ${where}` : sql``}
    order by ${messages.id} desc limit ${limit}`
}

/**
 * The insert, prepared once: Postgres parses and plans it once per connection instead of
 * at every message (pgbench: 4.7k → 7.0k inserts per second). Two data-modifying CTEs,
 * as drizzle prepares only a select: Postgres runs `message` though nothing selects it,
 * and `event` reads its row.
 */
function prepareInsertWithEvent(db: Executor) {
  const placeholder = sql.placeholder
  const message = db
    .$with('message', { id: sql<number>`id`.as('id') })
    .as(sql`insert into ${messages} (chat_id, text, author)
      values (${placeholder('chatId')}, ${placeholder('text')}, ${placeholder('author')})
      returning id, chat_id, text, author, created_at`)
  const event = db
    .$with('event', {
      id: sql<string | number>`id`.as('id'),
      payload: sql<MessageAddedEvent>`payload`.as('payload'),
    })
    .as(sql`insert into ${outbox} (topic, payload)
      select ${placeholder('topic')}, jsonb_build_object('messageAdded', jsonb_build_object(
        'id', id, 'chatId', chat_id, 'text', text, 'author', author,
        'createdAt', ${isoInstant(sql`created_at`)}))
      from message
      returning id, payload`)
  return db.with(message, event).select().from(event).prepare('messages_insert_with_event')
}

export type MessagesRepository = ReturnType<typeof createMessagesRepository>
