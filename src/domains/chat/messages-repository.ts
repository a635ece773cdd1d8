import { and, desc, gte, lt, lte, type Placeholder, sql } from 'drizzle-orm'
import { type Database, prepareRows } from '../../db/client.js'
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

export function createMessagesRepository(db: Database) {
  const insertWithEvent = prepareInsertWithEvent(db)
  const newestStatements = prepareNewest(db)
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
      const [row] = await insertWithEvent({ chatId, text, author, topic })
      if (!row) throw new Error('INSERT … RETURNING gave no row')
      return { id: Number(row.id), topic, payload: row.payload }
    },

    /** The newest `limit` matching messages, newest first. */
    newest(query: MessageQuery): Promise<Message[]> {
      return newestStatements[shapeOf(query)]({ ...query })
    },

    /** The statement behind newest, unprepared, for EXPLAIN. */
    newestQuery: (query: MessageQuery) => newestQuery(db, query),
  }
}

type Shape = 'all' | 'allBefore' | 'chat' | 'chatBefore'

const shapeOf = ({ chatId, beforeId }: MessageQuery): Shape =>
  chatId === undefined
    ? beforeId === undefined
      ? 'all'
      : 'allBefore'
    : beforeId === undefined
      ? 'chat'
      : 'chatBefore'

/**
 * The list, prepared once per shape (with or without a chat, a page back or not): Postgres
 * plans it once per connection rather than at every request, which was half the cost
 * Postgres paid for a list of 50.
 *
 * A prepared statement soon runs on a generic plan, made without knowing the chat, so a
 * chat's list is written as a range of the chat index, ordered as that index is: (chat,
 * id) from (chat, before) down to the chat's start. With `chat_id = $1 order by id` the
 * generic plan may read the primary key backwards, through a busy chat's messages, to
 * find a quiet chat's 50.
 */
function prepareNewest(db: Database) {
  const placeholders = {
    chatId: sql.placeholder('chatId'),
    beforeId: sql.placeholder('beforeId'),
    limit: sql.placeholder('limit'),
  }
  const prepared = (query: MessageQuery) =>
    prepareRows<Message>(db, newestQuery(db, query, placeholders))
  return {
    all: prepared({ limit: 0 }),
    allBefore: prepared({ beforeId: 0, limit: 0 }),
    chat: prepared({ chatId: '', limit: 0 }),
    chatBefore: prepared({ chatId: '', beforeId: 0, limit: 0 }),
  }
}

/** The list for a query's shape, with its values, or with placeholders standing in for them. */
function newestQuery(
  db: Database,
  { chatId, beforeId, limit }: MessageQuery,
  placeholders?: Record<keyof MessageQuery, Placeholder>,
) {
  const chat = chatId === undefined ? undefined : (placeholders?.chatId ?? chatId)
  const before = beforeId === undefined ? undefined : (placeholders?.beforeId ?? beforeId)
  return db
    .select({
      id: messages.id,
      chatId: sql<string>`${messages.chatId}`.as('chatId'),
      text: messages.text,
      author: messages.author,
      createdAt: isoInstant(messages.createdAt).as('createdAt'),
    })
    .from(messages)
    .where(filterOf(chat, before))
    .orderBy(...(chat === undefined ? [] : [desc(messages.chatId)]), desc(messages.id))
    .limit(placeholders?.limit ?? limit)
}

type Value<T> = T | Placeholder

function filterOf(chat: Value<string> | undefined, before: Value<number> | undefined) {
  if (chat === undefined) return before === undefined ? undefined : lt(messages.id, before)
  if (before === undefined) return and(gte(messages.chatId, chat), lte(messages.chatId, chat))
  return and(
    gte(messages.chatId, chat),
    sql`(${messages.chatId}, ${messages.id}) < (${chat}, ${before})`,
  )
}

/**
 * The insert, prepared once: Postgres parses and plans it once per connection instead of
 * at every message (pgbench: 4.7k → 7.0k inserts per second). Two data-modifying CTEs,
 * as drizzle prepares only a select: Postgres runs `message` though nothing selects it,
 * and `event` reads its row.
 */
function prepareInsertWithEvent(db: Database) {
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
  return prepareRows<{ id: string | number; payload: MessageAddedEvent }>(
    db,
    db.with(message, event).select().from(event),
  )
}

export type MessagesRepository = ReturnType<typeof createMessagesRepository>
