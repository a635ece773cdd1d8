import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { isDataError } from '../src/db/errors.js'
import { rowsOf } from '../src/db/statement-rows.js'
import { chatTopics } from '../src/domains/chat/chat-topics.js'
import {
  createMessagesRepository,
  type MessagesRepository,
  type NewMessage,
} from '../src/domains/chat/messages-repository.js'
import { backends, type TestDatabase } from './helpers/backends.js'

// Messages sent in one turn are written by one statement: each must still get its own row and event.
describe.each(backends)('messages sent together on $name', (backend) => {
  let testDatabase: TestDatabase
  let repository: MessagesRepository

  beforeAll(async () => {
    testDatabase = await backend.open()
    repository = createMessagesRepository(testDatabase.database.db)
  })
  afterAll(() => testDatabase?.drop())

  const send = (message: NewMessage) =>
    repository.insertWithEvent(message, chatTopics.messageAdded(message.chatId))

  it('answers each its own message and event, in the order sent, and outboxes each event once', async () => {
    const sent = [
      { chatId: 'alpha', text: 'first, "quoted" \\ text', author: 'ann' },
      { chatId: 'beta/+', text: 'second ünïcode 💬', author: 'bob' },
      { chatId: 'alpha', text: 'third', author: 'cy' },
    ]
    const events = await Promise.all(sent.map(send))

    expect(events.map((event) => event.payload.messageAdded)).toMatchObject(sent)
    expect(events.map((event) => event.topic)).toEqual(
      sent.map(({ chatId }) => chatTopics.messageAdded(chatId)),
    )
    const messageIds = events.map((event) => event.payload.messageAdded.id)
    expect(messageIds).toEqual([...messageIds].sort((a, b) => a - b))
    const eventIds = events.map((event) => event.id)
    expect(eventIds).toEqual([...eventIds].sort((a, b) => a - b))

    const outboxed = rowsOf<{ id: string | number; topic: string; payload: unknown }>(
      await testDatabase.database.db.execute(sql`
        select id, topic, payload from outbox where id in (${sql.join(eventIds, sql`, `)}) order by id`),
    )
    expect(outboxed.map((row) => ({ ...row, id: Number(row.id) }))).toEqual(
      events.map(({ id, topic, payload }) => ({ id, topic, payload })),
    )
  })

  it('fails only the message the database refused; the others are stored with their events', async () => {
    const refused = { chatId: 'gamma', text: null as unknown as string, author: 'dee' }
    const outcomes = await Promise.allSettled([
      send({ chatId: 'gamma', text: 'kept before', author: 'dee' }),
      send(refused),
      send({ chatId: 'gamma', text: 'kept after', author: 'dee' }),
    ])

    expect(isDataError((outcomes[1] as PromiseRejectedResult).reason)).toBe(true)
    const kept = outcomes.flatMap((outcome) =>
      outcome.status === 'fulfilled' ? [outcome.value.payload.messageAdded.text] : [],
    )
    expect(kept).toEqual(['kept before', 'kept after'])
    const stored = await repository.newest({ chatId: 'gamma', limit: 10 })
    expect(stored.map((message) => message.text)).toEqual(['kept after', 'kept before'])
    const outboxed = rowsOf<{ count: number }>(
      await testDatabase.database.db.execute(
        sql`select count(*)::int as count from outbox where topic = ${chatTopics.messageAdded('gamma')}`,
      ),
    )
    expect(outboxed[0]?.count).toBe(2)
  })
})
