import { count, eq } from 'drizzle-orm'
import { pino } from 'pino'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { outbox as outboxTable } from '../src/db/schema.js'
import { chatTopics, type MessageAddedEvent } from '../src/domains/chat/chat-topics.js'
import { createOutbox } from '../src/platform/infrastructure/outbox.js'
import { backends } from './helpers/backends.js'
import { collect, graphql, subscriptionsActive, wsClient } from './helpers/graphql.js'
import { startServer, type TestServer } from './helpers/server.js'

/**
 * The transactional outbox: events written with the change they report, published after
 * the commit by whichever instance relays, in order, at least once, never twice to one
 * subscriber.
 */

const messageAdded = (id: number, chatId: string): MessageAddedEvent => ({
  messageAdded: {
    id,
    chatId,
    text: `event ${id}`,
    author: 'outbox',
    createdAt: new Date().toISOString(),
  },
})

describe.each(backends)('the outbox on $name', (backend) => {
  let server: TestServer
  /** A second relay over the same database and bus: another instance's, as it were. */
  let other: ReturnType<typeof createOutbox>

  beforeAll(async () => {
    server = await startServer(backend)
    other = createOutbox({
      db: server.testDatabase.database.db,
      publishWaitMs: 100,
      events: server.events,
      log: pino({ level: 'silent' }),
    })
  })
  afterAll(() => server?.close())
  // Each test starts with no live subscription, so the counts below are its own.
  afterEach(async () => {
    await expect.poll(() => server.events.activeSubscriptions()).toBe(0)
  })

  const db = () => server.testDatabase.database.db

  async function commitAndPublish(topic: string, event: MessageAddedEvent) {
    const pending = await db().transaction((tx) => other.enqueue(tx, topic, event))
    await other.publish([pending])
    return pending
  }

  /** The events of a topic still in the outbox: not yet published, or published and not yet deleted. */
  async function eventsOn(topic: string) {
    const [{ events = 0 } = {}] = await db()
      .select({ events: count() })
      .from(outboxTable)
      .where(eq(outboxTable.topic, topic))
    return events
  }

  function subscribe(chatId: string) {
    const client = wsClient(server.baseUrl)
    const subscription = collect<{ messageAdded: { text: string } }>(
      client,
      'subscription($chatId: ID) { messageAdded(chatId: $chatId) { text } }',
      { chatId },
    )
    return {
      subscription,
      texts: () => subscription.items.map((item) => item.messageAdded.text),
      async dispose() {
        subscription.dispose()
        await client.dispose()
      },
    }
  }

  it('publishes nothing of a transaction that rolled back', async () => {
    const watcher = subscribe('rolled-back')
    await subscriptionsActive(server.events, 1)
    const topic = chatTopics.messageAdded('rolled-back')
    await expect(
      db().transaction(async (tx) => {
        await other.enqueue(tx, topic, messageAdded(1, 'rolled-back'))
        throw new Error('the change failed after its event was written')
      }),
    ).rejects.toThrow('the change failed')
    // Committed now: the one event that must arrive, after anything rolled back would have.
    await commitAndPublish(topic, messageAdded(2, 'rolled-back'))
    await watcher.subscription.until(1)
    expect(watcher.texts()).toEqual(['event 2'])
    await watcher.dispose()
  })

  it('publishes an event that an instance committed but never relayed', async () => {
    const watcher = subscribe('orphaned')
    await subscriptionsActive(server.events, 1)
    // Committed, then the instance died before its flush: no one nudges the relay.
    await db()
      .insert(outboxTable)
      .values({
        topic: chatTopics.messageAdded('orphaned'),
        payload: messageAdded(3, 'orphaned'),
      })
    // The running server's relay finds it on its next round.
    await watcher.subscription.until(1)
    expect(watcher.texts()).toEqual(['event 3'])
    await watcher.dispose()
    // The relay deletes it in the transaction that delivered it, which commits a moment later.
    await expect.poll(() => eventsOn(chatTopics.messageAdded('orphaned'))).toBe(0)
  })

  it('deletes the events it published after their commit, a batch at a time', async () => {
    const watcher = subscribe('deleted')
    await subscriptionsActive(server.events, 1)
    const sent = await Promise.all(
      ['one', 'two', 'three'].map((text) =>
        graphql(
          server.baseUrl,
          'mutation($text: String!) { sendMessage(text: $text, author: "a", chatId: "deleted") { id } }',
          { text },
        ),
      ),
    )
    expect(sent.map((response) => response.body.errors)).toEqual([undefined, undefined, undefined])
    await watcher.subscription.until(3)
    // Sooner than the relay, which leaves an event to its publisher for two seconds.
    await expect.poll(() => eventsOn(chatTopics.messageAdded('deleted'))).toBe(0)
    await watcher.dispose()
  })

  it('delivers in commit order, and an event published again reaches no subscriber twice', async () => {
    const watcher = subscribe('ordered')
    await subscriptionsActive(server.events, 1)
    const topic = chatTopics.messageAdded('ordered')
    const published = []
    for (let id = 10; id < 30; id += 1) {
      published.push(await commitAndPublish(topic, messageAdded(id, 'ordered')))
    }
    await watcher.subscription.until(20)
    // At least once: a relay that died before deleting its batch sent publishes it again.
    for (const event of published) await server.events.deliver(topic, event.payload, event.id)
    await commitAndPublish(topic, messageAdded(30, 'ordered'))
    await watcher.subscription.until(21)
    expect(watcher.texts()).toEqual(Array.from({ length: 21 }, (_, index) => `event ${index + 10}`))
    await watcher.dispose()
  })

  it('hands a listener every event when they arrive out of id order, as commits may', async () => {
    const topic = chatTopics.messageAdded('out-of-order')
    const received = await server.events.subscribe(topic, { maxQueued: 10, onOverflow() {} })
    // Two transactions took ids 51 and 52, and 52 committed and went out first.
    await server.events.deliver(topic, messageAdded(52, 'out-of-order'), 52)
    await server.events.deliver(topic, messageAdded(51, 'out-of-order'), 51)
    await server.events.deliver(topic, messageAdded(52, 'out-of-order'), 52)
    await server.events.deliver(topic, messageAdded(53, 'out-of-order'), 53)
    const texts = []
    for (let count = 0; count < 3; count += 1) {
      const { value } = await received.next()
      texts.push(value?.messageAdded.text)
    }
    // Put back in id order for a subscriber by the chat's store: resumable-subscriptions.test.ts.
    expect(texts).toEqual(['event 52', 'event 51', 'event 53'])
    await received.return?.()
  })
})
