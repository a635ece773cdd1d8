import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
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

  /** The plan Postgres gives the statement when it plans it for any values, not these. */
  const genericPlanOf = (query: MessageQuery) =>
    testDatabase.database.db.transaction(async (transaction) => {
      const { sql: text, params } = repository.newestQuery(query).toSQL()
      // EXECUTE takes no bound parameters: the test's own values, as literals.
      const literals = params.map((param) =>
        typeof param === 'number' ? String(param) : `'${String(param).replaceAll("'", "''")}'`,
      )
      await transaction.execute(sql`set local plan_cache_mode = force_generic_plan`)
      await transaction.execute(sql.raw(`prepare generic_probe as ${text}`))
      try {
        return await planNodesOf(
          transaction,
          sql.raw(`execute generic_probe(${literals.join(', ')})`),
        )
      } finally {
        await transaction.execute(sql`deallocate generic_probe`)
      }
    })

  beforeAll(async () => {
    testDatabase = await backend.open({ databaseTimeoutMs: 60_000 })
    await testDatabase.database.db.execute(sql`
      insert into messages (chat_id, text, author)
      select case when n <= 1000 then 'quiet' else 'busy' end, 'message ' || n, 'ann'
      from generate_series(1, 30000) as n`)
    await testDatabase.database.db.execute(sql`analyze messages`)
    repository = createMessagesRepository(testDatabase.database.db)
  })
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

  // The lists are prepared, and a prepared statement soon runs on a generic plan, made
  // without knowing the chat: that plan must still read only the chat's index entries.
  it.each([
    ['the newest of a quiet chat', { chatId: 'quiet', limit: 50 }],
    ['a page back in a quiet chat', { chatId: 'quiet', beforeId: 500, limit: 50 }],
  ])('reads %s from the chat index on a generic plan too', async (_, query) => {
    const nodes = await genericPlanOf(query)
    const scans = nodes.filter((node) => node['Relation Name'] === 'messages')
    expect(scans.map((scan) => scan['Index Name'])).toEqual(['messages_chat_id_idx'])
    expect(nodes.map((node) => node['Node Type'])).not.toContain('Sort')
  })

  it('answers the same list from its prepared statement, run after run', async () => {
    const first = await repository.newest({ chatId: 'quiet', beforeId: 900, limit: 5 })
    for (let run = 0; run < 7; run += 1) {
      expect(await repository.newest({ chatId: 'quiet', beforeId: 900, limit: 5 })).toEqual(first)
    }
    expect(first.map((message) => message.id)).toEqual([899, 898, 897, 896, 895])
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
