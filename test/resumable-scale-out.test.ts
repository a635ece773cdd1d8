import { asc, eq } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { messages } from '../src/db/schema.js'
import { backends } from './helpers/backends.js'
import { graphql, subscriptionsActive } from './helpers/graphql.js'
import { rawSubscription, TRANSPORT_WS } from './helpers/raw-subscription.js'
import { redisUrl } from './helpers/redis.js'
import { startServer, type TestServer } from './helpers/server.js'

/**
 * The seam of a resumed subscription across instances: a client's connection dies
 * mid-stream while messages keep coming through both instances, and the client resumes
 * on the other instance after the last id it received; what it received before and
 * after is exactly what was sent, in order.
 */

const SENDERS = 4
/** Messages received before the connection dies, sent while it is down, and after it resumed. */
const BEFORE_KILL = 40
const WHILE_DOWN = 120
const AFTER_RESUMING = 120

const SEND = `mutation Send($text: String!, $chatId: ID!) {
  sendMessage(text: $text, author: "seam", chatId: $chatId) { id }
}`
const MESSAGE_ADDED = `subscription ($chatId: ID, $after: ID) {
  messageAdded(chatId: $chatId, after: $after) { id text }
}`

interface Added {
  messageAdded: { id: string; text: string }
}

/** Resolves once `condition` holds, checked as the senders make progress. */
async function until(condition: () => boolean, what: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

describe.runIf(redisUrl).each(backends)(
  'resuming on another instance through Redis on $name',
  (backend) => {
    let instances: [TestServer, TestServer]

    beforeAll(async () => {
      const first = await startServer(backend, { REDIS_URL: redisUrl as string })
      const second = await startServer(
        backend,
        { REDIS_URL: redisUrl as string },
        { testDatabase: first.testDatabase },
      )
      instances = [first, second]
    })
    afterAll(async () => {
      for (const instance of instances ?? []) await instance.close()
    })

    it('receives every message once and in order when the connection dies mid-stream and resumes on the other instance', async () => {
      const [first, second] = instances
      const chatId = `seam-${Date.now()}`
      const before = await rawSubscription<Added>(first.baseUrl, TRANSPORT_WS, {
        query: MESSAGE_ADDED,
        variables: { chatId },
      })
      await subscriptionsActive(first.events, 1)

      // Senders through both instances, each sending as soon as its last is answered.
      const sent: number[] = []
      let sending = true
      const senders = Array.from({ length: SENDERS }, async (_, sender) => {
        for (let turn = 0; sending; turn += 1) {
          const instance = instances[(sender + turn) % 2] as TestServer
          const text = `s${sender}-${turn}`
          const response = await graphql(instance.baseUrl, SEND, { text, chatId })
          expect(response.body.errors, JSON.stringify(response.body)).toBeUndefined()
          sent.push(Number(response.body.data.sendMessage.id))
        }
      })

      await before.until(BEFORE_KILL)
      before.kill()
      const sentAtKill = sent.length
      await until(() => sent.length >= sentAtKill + WHILE_DOWN, 'messages sent while down')
      const lastReceived = Number(before.items.at(-1)?.messageAdded.id)

      // Resumed on the other instance while the senders go on.
      const sentAtResume = sent.length
      const after = await rawSubscription<Added>(second.baseUrl, TRANSPORT_WS, {
        query: MESSAGE_ADDED,
        variables: { chatId, after: String(lastReceived) },
      })
      await after.until(1)
      const sentWhenResumed = sent.length
      await until(() => sent.length >= sentWhenResumed + AFTER_RESUMING, 'messages sent after')
      sending = false
      await Promise.all(senders)

      const expected = [...sent].sort((a, b) => a - b)
      const owedAfter = expected.filter((id) => id > lastReceived).length
      await after.until(owedAfter)
      // A barrier: the stored chat, every message of it, as the senders were answered.
      const storedIds = (
        await first.testDatabase.database.db
          .select({ id: messages.id })
          .from(messages)
          .where(eq(messages.chatId, chatId))
          .orderBy(asc(messages.id))
      ).map((row) => row.id)
      expect(storedIds).toEqual(expected)

      const idsOf = (items: Added[]) => items.map((item) => Number(item.messageAdded.id))
      const received = [...idsOf(before.items), ...idsOf(after.items)]
      const unique = new Set(received)
      const duplicates = received.length - unique.size
      const gaps = expected.filter((id) => !unique.has(id)).length
      const unknown = received.filter((id) => !expected.includes(id)).length
      console.log(
        `resume seam (${backend.name}): ${expected.length} messages sent by ${SENDERS} senders ` +
          `through 2 instances; ${before.items.length} received before the kill, ` +
          `${sentAtResume - sentAtKill} sent while down, ${sentWhenResumed - sentAtResume} sent ` +
          `during the reconnect (from its subscribe to its first message), ${after.items.length} ` +
          `received after resuming on the other instance; ${received.length} received in all, ` +
          `${duplicates} duplicates, ${gaps} gaps`,
      )
      expect({ duplicates, gaps, unknown }).toEqual({ duplicates: 0, gaps: 0, unknown: 0 })
      // In id order, the one stream and then the other, the whole of what was sent.
      expect(received).toEqual(expected)
      expect(after.errors).toEqual([])
      after.kill()
    }, 120_000)
  },
)
