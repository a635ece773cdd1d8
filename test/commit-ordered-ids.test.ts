import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SCOPE_LOCKS } from '../src/db/ordered-scopes.js'
import { users } from '../src/db/schema.js'
import { rowsOf } from '../src/db/statement-rows.js'
import { chatTopics, type MessageAddedEvent } from '../src/domains/chat/chat-topics.js'
import {
  createMessagesRepository,
  type MessagesRepository,
} from '../src/domains/chat/messages-repository.js'
import { createNotificationsRepository } from '../src/domains/notifications/notifications-repository.js'
import { createNotificationsService } from '../src/domains/notifications/notifications-service.js'
import type { NotificationAddedEvent } from '../src/domains/notifications/notifications-topics.js'
import { backends, type TestDatabase } from './helpers/backends.js'

/**
 * Ids that ascend in commit order within a chat and within one user's notifications
 * (docs/decisions/commit-ordered-ids.md): each insert waits for the scope's one before
 * it to commit before it draws its id, and its event names that one (`previousId`).
 */

/** Each event of a scope names the one before it: ids sorted, every previousId the id before. */
function chainOf(events: { id: number; previousId: number | undefined }[]) {
  const sorted = [...events].sort((a, b) => a.id - b.id)
  return sorted.map((event, index) => ({
    id: event.id,
    previousId: event.previousId,
    expected: index === 0 ? event.previousId : sorted[index - 1]?.id,
  }))
}
const brokenLinks = (events: { id: number; previousId: number | undefined }[]) =>
  chainOf(events).filter((link) => link.previousId !== link.expected)

function notifier(testDatabase: TestDatabase) {
  const enqueued: NotificationAddedEvent[] = []
  const service = createNotificationsService({
    notifications: createNotificationsRepository(testDatabase.database.db),
    outbox: {
      enqueue: async (_executor, topic, payload) => {
        enqueued.push(payload as NotificationAddedEvent)
        return { id: enqueued.length, topic, payload, traceparent: undefined }
      },
    },
  })
  return { service, enqueued }
}

async function newAccount(testDatabase: TestDatabase) {
  const [account] = await testDatabase.database.db
    .insert(users)
    .values({
      name: 'Ordered',
      email: `ordered-${Date.now()}-${Math.random()}@example.com`,
      passwordHash: 'never logs in',
    })
    .returning({ id: users.id })
  return account?.id as number
}

describe.each(backends)('ids in commit order on $name', (backend) => {
  let testDatabase: TestDatabase
  let repository: MessagesRepository

  beforeAll(async () => {
    testDatabase = await backend.open()
    repository = createMessagesRepository(testDatabase.database.db)
  })
  afterAll(() => testDatabase?.drop())

  const send = (chatId: string, text: string) =>
    repository.insertWithEvent({ chatId, text, author: 'orderly' }, chatTopics.messageAdded(chatId))
  const placement = ({ messageAdded, previousId }: MessageAddedEvent) => ({
    id: messageAdded.id,
    previousId,
  })

  it('gives each message the id of its chat’s one before, sent one by one or many at once', async () => {
    const chats = ['ordered-a', 'ordered-b', 'ordered-c']
    const lone = await send('ordered-a', 'before the rest')
    // Many in one turn: batches of several chats each, and several batches at once.
    const sent = await Promise.all(
      Array.from({ length: 250 }, (_, index) => send(chats[index % 3] as string, `m${index}`)),
    )
    for (const chatId of chats) {
      const events = [lone, ...sent]
        .filter((event) => event.payload.messageAdded.chatId === chatId)
        .map((event) => placement(event.payload))
      expect(brokenLinks(events)).toEqual([])
      expect(chainOf(events)[0]?.previousId).toBe(0)
    }
    // The outbox holds each event as it was answered, previousId and all.
    const outboxed = rowsOf<{ payload: MessageAddedEvent }>(
      await testDatabase.database.db.execute(
        sql`select payload from outbox where topic = ${chatTopics.messageAdded('ordered-b')}`,
      ),
    )
    expect(brokenLinks(outboxed.map((row) => placement(row.payload)))).toEqual([])
  })

  it("gives each notification the id of its user's one before, made in concurrent transactions", async () => {
    const { service, enqueued } = notifier(testDatabase)
    const [userId, otherId] = [await newAccount(testDatabase), await newAccount(testDatabase)]
    const notify = (owner: number) =>
      testDatabase.database.db.transaction((tx) =>
        service.notify(tx, { userId: owner, kind: 'test.order', title: String(owner), body: 'b' }),
      )
    await Promise.all(
      Array.from({ length: 40 }, (_, index) => notify(index % 4 === 0 ? otherId : userId)),
    )
    const ofUser = (owner: number) =>
      enqueued.filter((event) => event.notificationAdded.title === String(owner))
    for (const owner of [userId, otherId]) {
      const events = ofUser(owner).map(({ notificationAdded, previousId }) => ({
        id: notificationAdded.id,
        previousId,
      }))
      expect(events.length).toBeGreaterThan(0)
      expect(brokenLinks(events)).toEqual([])
      expect(chainOf(events)[0]?.previousId).toBe(0)
    }
  })
})

const postgresBackend = backends.find((backend) => backend.name === 'postgres')

describe.runIf(postgresBackend)('a scope’s lock on Postgres', () => {
  let testDatabase: TestDatabase
  let holder: postgres.Sql
  let repository: MessagesRepository

  beforeAll(async () => {
    testDatabase = await (postgresBackend as NonNullable<typeof postgresBackend>).open()
    holder = postgres(testDatabase.url as string, { max: 2, onnotice: () => {} })
    repository = createMessagesRepository(testDatabase.database.db)
  })
  afterAll(async () => {
    await holder?.end()
    await testDatabase?.drop()
  })

  /** Whether a statement waits on a lock of the space, as pg_locks shows it. */
  const waitsOn = async (space: number) => {
    const [row] = await holder`select count(*)::int as waiting from pg_locks
      where locktype = 'advisory' and not granted and classid = ${space}`
    return (row?.waiting ?? 0) > 0
  }

  /**
   * Runs `whileHeld` inside a transaction of its own that holds the scope's lock, as a
   * sender that has drawn its id and not committed yet holds it.
   */
  async function holding<T>(space: number, key: string, whileHeld: () => Promise<T>) {
    let release: () => void = () => {}
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    let held: () => void = () => {}
    const locked = new Promise<void>((resolve) => {
      held = resolve
    })
    const transaction = holder.begin(async (tx) => {
      await tx.unsafe(`select pg_advisory_xact_lock(${space}, ${key})`)
      held()
      await released
    })
    await locked
    try {
      return await whileHeld()
    } finally {
      release()
      await transaction
    }
  }

  it('draws a message’s id only once the chat’s message before it has committed', async () => {
    // Two instances: one instance's next batch waits for the one it is writing.
    const [one, another] = [repository, createMessagesRepository(testDatabase.database.db)]
    const send = (by: MessagesRepository, chatId: string) =>
      by.insertWithEvent(
        { chatId, text: 'waits its turn', author: 'orderly' },
        chatTopics.messageAdded(chatId),
      )
    let waiting: ReturnType<typeof send> | undefined
    const other = await holding(SCOPE_LOCKS.chat, "hashtext('held-chat')", async () => {
      waiting = send(one, 'held-chat')
      await expect.poll(() => waitsOn(SCOPE_LOCKS.chat)).toBe(true)
      // Another chat's message goes by meanwhile, and draws its id first.
      return send(another, 'free-chat')
    })
    const held = await (waiting as ReturnType<typeof send>)
    expect(held.payload.messageAdded.id).toBeGreaterThan(other.payload.messageAdded.id)
  })

  it("draws a notification's id only once the user's one before it has committed", async () => {
    const { service } = notifier(testDatabase)
    const [heldUser, freeUser] = [await newAccount(testDatabase), await newAccount(testDatabase)]
    const notify = (userId: number) =>
      testDatabase.database.db.transaction((tx) =>
        service.notify(tx, { userId, kind: 'test.order', title: 'waits', body: 'b' }),
      )
    let waiting: ReturnType<typeof notify> | undefined
    const other = await holding(SCOPE_LOCKS.notificationsOfUser, String(heldUser), async () => {
      waiting = notify(heldUser)
      await expect.poll(() => waitsOn(SCOPE_LOCKS.notificationsOfUser)).toBe(true)
      return notify(freeUser)
    })
    const held = await (waiting as ReturnType<typeof notify>)
    expect(held.payload.notificationAdded.id).toBeGreaterThan(other.payload.notificationAdded.id)
  })
})
