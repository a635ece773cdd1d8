import { and, desc, eq, gte, lt, lte, type Placeholder, sql } from 'drizzle-orm'
import type { Database } from '../../db/database.js'
import { batchedInserts, givenRows, givenValues } from '../../db/insert-batches.js'
import { isoInstant, type WithIsoInstants } from '../../db/iso-instant.js'
import { type IdRange, idsIn, newestIdOf, SCOPE_LOCKS, scopeLock } from '../../db/ordered-scopes.js'
import { messages, outbox } from '../../db/schema.js'
import { preparedTransaction, prepareRows } from '../../db/statement-rows.js'
import type { Topic } from '../../platform/infrastructure/events.js'
import type { PendingEvent } from '../../platform/infrastructure/outbox.js'
import type { MessageAddedEvent } from './chat-topics.js'

export type NewMessage = Pick<typeof messages.$inferInsert, 'chatId' | 'text' | 'author'>

/** A message as clients receive it, listed or live: its time as ISO 8601 text. */
export type Message = WithIsoInstants<typeof messages.$inferSelect>

export interface MessageQuery {
  chatId?: string | undefined
  /** Only messages with a smaller id. */
  beforeId?: number | undefined
  limit: number
}

export function createMessagesRepository(db: Database) {
  const insertWithEvents = prepareInsertWithEvents(db)
  const insertBatched = batchedInserts(
    (given: readonly GivenMessage[]) => insertWithEvents(givenValues(given)),
    { oneAtATime: true },
  )
  const newestStatements = prepareNewest(db)
  return {
    /**
     * Stores a message and its messageAdded event for the outbox in one transaction (so
     * both or neither) of two statements sent together, with the other messages sent in
     * the same turn, or while the batch before was written (see batchedInserts); the
     * event is the message as subscribers receive it, and as the sender is answered.
     */
    async insertWithEvent(
      { chatId, text, author, traceparent }: NewMessage & { traceparent?: string | undefined },
      topic: Topic<MessageAddedEvent>,
    ): Promise<PendingEvent<MessageAddedEvent>> {
      const row = await insertBatched({ chatId, text, author, topic, traceparent })
      return { id: Number(row.id), topic, payload: row.payload, traceparent }
    },

    /** The newest `limit` matching messages, newest first. */
    newest(query: MessageQuery): Promise<Message[]> {
      return newestStatements[shapeOf(query)]({ ...query })
    },

    /** The statement behind newest, unprepared, for EXPLAIN. */
    newestQuery: (query: MessageQuery) => newestQuery(db, query),

    /** The chat's messages with an id in the range, oldest first. */
    between(chatId: string, range: IdRange): Promise<Message[]> {
      return db
        .select(messageColumns)
        .from(messages)
        .where(and(eq(messages.chatId, chatId), idsIn(messages.id, range)))
        .orderBy(messages.chatId, messages.id)
        .limit(range.limit)
    },

    /** The id of the chat's newest message, 0 when it has none. */
    async newestId(chatId: string): Promise<number> {
      const [row] = await db
        .select({ id: newestIdOf(messages.id) })
        .from(messages)
        .where(eq(messages.chatId, chatId))
      return row?.id ?? 0
    },

    /** The chat message `id` is in, if there is such a message. */
    async chatOf(id: number): Promise<string | undefined> {
      const [row] = await db
        .select({ chatId: messages.chatId })
        .from(messages)
        .where(eq(messages.id, id))
      return row?.chatId
    },
  }
}

/** Every column of Message, its time as ISO 8601 text. */
const messageColumns = {
  id: messages.id,
  chatId: sql<string>`${messages.chatId}`.as('chatId'),
  text: messages.text,
  author: messages.author,
  createdAt: isoInstant(messages.createdAt).as('createdAt'),
  // Every column of Message: one added to the table must be written here too.
} satisfies Record<keyof Message, unknown>

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
 * plans it once per connection rather than at every request, where planning was a large
 * part of what Postgres paid for a list.
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
    .select(messageColumns)
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

/** A message to insert, with the topic of its messageAdded event and the sender's trace. */
interface GivenMessage extends NewMessage {
  topic: string
  traceparent: string | undefined
}

/**
 * The messages given (see givenRows), each stored with its messageAdded event for the
 * outbox, in one transaction of two statements sent together (see preparedTransaction).
 *
 * The first takes the lock of each chat of the batch, in the order of their keys (so
 * that two batches never wait on each other), and holds it to the commit: a chat's next
 * message draws its id only once the one before has committed, and ids ascend in
 * commit order within a chat (docs/decisions/commit-ordered-ids.md). The second,
 * started once the locks are held, sees every message of those chats before it, and so
 * gives each event its chat's previous message (`previousId`), by which a subscriber
 * knows it missed none.
 *
 * The messages are inserted in the order given, so their ids ascend in it; the events
 * follow their messages' order, and are answered in it. Data-modifying CTEs, as drizzle
 * prepares only a select: Postgres runs `message` though the select reads only `event`.
 */
function prepareInsertWithEvents(db: Database) {
  const lockChats = db.select({ locked: scopeLock(SCOPE_LOCKS.chat, sql`key`) }).from(
    sql`(select distinct hashtext("chatId") as key from ${givenRows(sql`"chatId" text`)}
        order by key) as chats`,
  )
  const given = db
    .$with('given', {
      position: sql<number>`position`.as('position'),
      topic: sql<string>`topic`.as('topic'),
    })
    .as(sql`select "chatId" as chat_id, text, author, topic, traceparent, ordinality as position
      from ${givenRows(sql`"chatId" text, text text, author text, topic text, traceparent text`)}`)
  const message = db
    .$with('message', { id: sql<number>`id`.as('id') })
    .as(sql`insert into ${messages} (chat_id, text, author)
      select chat_id, text, author from given order by position
      returning id, chat_id, text, author, created_at`)
  // The statement's snapshot holds none of the messages it inserts: the chat's newest
  // before them is the one before the batch's first.
  const event = db
    .$with('event', {
      id: sql<string | number>`id`.as('id'),
      payload: sql<MessageAddedEvent>`payload`.as('payload'),
    })
    .as(sql`insert into ${outbox} (topic, payload, traceparent)
      select given.topic, jsonb_build_object('messageAdded', jsonb_build_object(
        'id', added.id, 'chatId', added.chat_id, 'text', added.text, 'author', added.author,
        'createdAt', ${isoInstant(sql`added.created_at`)}), 'previousId', added.previous_id),
        given.traceparent
      from (select *, row_number() over (order by id) as position,
          coalesce(lag(id) over (partition by chat_id order by id),
            (select max(stored.id) from ${messages} as stored where stored.chat_id = message.chat_id),
            0) as previous_id
        from message) as added
      join given using (position)
      order by added.id
      returning id, payload`)
  // Not outbox.$inferSelect: the driver reads int8 as text (postgres.js) or a number
  // (PGlite), and the payload is this event, where the column holds any JSON.
  return preparedTransaction<{ id: string | number; payload: MessageAddedEvent }>(db, [
    lockChats,
    db.with(given, message, event).select().from(event).orderBy(event.id),
  ])
}

export type MessagesRepository = ReturnType<typeof createMessagesRepository>
