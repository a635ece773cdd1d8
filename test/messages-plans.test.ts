import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { rowsOf } from '../src/db/client.js'
import {
  createMessagesRepository,
  type MessageQuery,
  type MessagesRepository,
} from '../src/domains/chat/messages-repository.js'
import { backends, type TestDatabase } from './helpers/backends.js'
import { planNodesOf } from './helpers/plans.js'

// A quiet chat (its 1000 messages older) beside a busy one (29000 newer): the plans are checked by their shape, never by time.
describe.each(backends)('the chat list plans on $name', (backend) => {
  let testDatabase: TestDatabase
  let repository: MessagesRepository

  const scansOf = (query: MessageQuery) =>
    planNodesOf(testDatabase.database.db, repository.newestQuery(query))

  beforeAll(async () => {
    testDatabase = await backend.open({ databaseTimeoutMs: 60_000 })
    await testDatabase.database.db.execute(sql`
      insert into messages (chat_id, text, author)
      select case when n <= 1000 then 'quiet' else 'busy' end, 'message ' || n, 'ann'
      from generate_series(1, 30000) as n`)
    await testDatabase.database.db.execute(sql`analyze messages`)
    repository = createMessagesRepository(testDatabase.database.db)
  }, 60_000)
  afterAll(() => testDatabase?.drop())

  it.each([
    ['the newest of a quiet chat', { chatId: 'quiet', limit: 50 }],
    ['a page back in a quiet chat', { chatId: 'quiet', beforeId: 500, limit: 50 }],
  ])('reads %s from the chat index, without sorting', async (_, query) => {
    const nodes = await scansOf(query)
    const scans = nodes.filter((node) => node['Relation Name'] === 'messages')
    expect(scans.map((scan) => scan['Index Name'])).toEqual(['messages_chat_id_idx'])
    expect(nodes.map((node) => node['Node Type'])).not.toContain('Sort')
  })

  // A statement Postgres keeps prepared may be given a generic plan, not knowing the chat:
  // that plan read the primary key backwards, past a busy chat's messages, to find 50.
  it('sends the list unnamed, so that each is planned for its chat', async () => {
    await testDatabase.database.db.transaction(async (transaction) => {
      const inTransaction = createMessagesRepository(transaction)
      for (let run = 0; run < 6; run += 1) {
        expect(await inTransaction.newest({ chatId: 'quiet', limit: 50 })).toHaveLength(50)
      }
      const prepared = rowsOf<{ statement: string }>(
        await transaction.execute(sql`select statement from pg_prepared_statements`),
      )
      expect(prepared.filter(({ statement }) => statement.includes('messages'))).toEqual([])
    })
  })

  it('lists a quiet chat newest first, its page back after it, and every chat by id', async () => {
    const newest = await repository.newest({ chatId: 'quiet', limit: 3 })
    expect(newest.map((message) => message.text)).toEqual([
      'message 1000',
      'message 999',
      'message 998',
    ])
    const [last] = newest.slice(-1)
    const older = await repository.newest({ chatId: 'quiet', beforeId: last?.id, limit: 1 })
    expect(older.map((message) => message.text)).toEqual(['message 997'])
    const everyChat = await repository.newest({ limit: 2 })
    expect(everyChat.map((message) => message.text)).toEqual(['message 30000', 'message 29999'])
    expect(new Date(newest[0]?.createdAt ?? '').toISOString()).toBe(newest[0]?.createdAt)
  })
})
