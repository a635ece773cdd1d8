import { MAX_REPLAYED, type OrderedScope, type Start } from '../../graphql/resumable.js'
import { assertValidFields, unauthenticated, validationFailed } from '../../platform/errors.js'
import type { Principal } from '../../platform/infrastructure/access-tokens.js'
import type { Outbox } from '../../platform/infrastructure/outbox.js'
import { isStorableText, readableTextProblem, rowIdOf } from '../../platform/input-rules.js'
import { chatTopics, type MessageAddedEvent } from './chat-topics.js'
import type { Message, MessagesRepository } from './messages-repository.js'

export const LIMITS = {
  text: { min: 1, max: 4000 },
  author: { min: 1, max: 100 },
  chatId: { min: 1, max: 100 },
}

export interface SendMessage {
  text: string
  author: string
  chatId: string
}

export interface FollowMessages {
  chatId?: string | null | undefined
  after?: string | null | undefined
}

export interface ListMessages {
  chatId?: string | null | undefined
  limit?: number | null | undefined
  before?: string | null | undefined
}

/** What the chat needs of the users domain: the name a signed-in author goes by. */
export interface Accounts {
  nameOf(userId: number): Promise<string | undefined>
}

interface Dependencies {
  messages: MessagesRepository
  outbox: Pick<Outbox, 'publish' | 'traceparent'>
  accounts: Accounts
}

export function createMessagesService({ messages, outbox, accounts }: Dependencies) {
  /** A signed-in caller writes as its account; an anonymous one names its author. */
  async function authorOf(given: string, principal: Principal | null): Promise<string> {
    if (!principal) return given
    const name = await accounts.nameOf(principal.userId)
    if (name === undefined) throw unauthenticated('The account of this token no longer exists')
    return name
  }

  return {
    /**
     * Stores the message with its messageAdded event, publishes that once stored, then
     * answers it. While the bus is away the message is stored and answered all the same;
     * its event goes out when the bus is back.
     */
    async send(input: SendMessage, principal: Principal | null): Promise<Message> {
      assertValidFields({
        text: textProblem(input.text, LIMITS.text),
        author: principal ? undefined : textProblem(input.author, LIMITS.author),
        chatId: textProblem(input.chatId, LIMITS.chatId),
      })
      const author = await authorOf(input.author, principal)
      const topic = chatTopics.messageAdded(input.chatId)
      const { text, chatId } = input
      const traceparent = outbox.traceparent()
      const pending = await messages.insertWithEvent({ text, chatId, author, traceparent }, topic)
      await outbox.publish([pending])
      return pending.payload.messageAdded
    },

    /**
     * Where a messageAdded subscription starts: in its chat, after `after` when given;
     * nowhere in particular when it follows every chat. Refuses a chat no message can be
     * in, and an `after` that is not a message of the chat.
     */
    async startOf({ chatId, after }: FollowMessages): Promise<Start<string> | undefined> {
      assertValidFields({ chatId: chatIdProblem(chatId) })
      if (after == null) return chatId == null ? undefined : { scope: chatId }
      if (chatId == null) {
        // Ids ascend in the order messages are stored only within a chat.
        throw validationFailed({ after: ['needs chatId: it resumes one chat'] })
      }
      const afterId = rowIdOf(after)
      const inChat = afterId !== undefined && (await messages.chatOf(afterId)) === chatId
      assertValidFields({ after: inChat ? undefined : 'must be the id of a message of this chat' })
      return { scope: chatId, after: afterId }
    },

    /** Each chat's messages in the order of their ids, as stored and as the bus carries them. */
    ordered: {
      placementOf: ({ messageAdded, previousId }) => ({
        scope: messageAdded.chatId,
        id: messageAdded.id,
        previousId,
      }),
      between: async (chatId, range) =>
        (await messages.between(chatId, range)).map((message) => ({ messageAdded: message })),
      newestId: (chatId) => messages.newestId(chatId),
    } satisfies OrderedScope<string, MessageAddedEvent>,

    /** A replay longer than MAX_REPLAYED is refused, pointing to the list. */
    replayTooLong: () =>
      validationFailed({
        after: [
          `is followed by more than ${MAX_REPLAYED} messages: read them with messages(chatId, before), then subscribe after the newest`,
        ],
      }),

    /**
     * The newest `limit` messages, oldest first; `before` pages back. `limit` is in its
     * range, which schema.graphql declares (graphql/argument-ranges.ts).
     */
    async list({ chatId, limit, before }: ListMessages): Promise<Message[]> {
      const pageSize = limit ?? 100
      const beforeId = before == null ? undefined : rowIdOf(before)
      const validBefore = before == null || beforeId !== undefined
      assertValidFields({
        before: validBefore ? undefined : 'must be the id of a message',
        chatId: chatIdProblem(chatId),
      })
      const rows = await messages.newest({ chatId: chatId ?? undefined, beforeId, limit: pageSize })
      return rows.reverse()
    },
  }
}

export type MessagesService = ReturnType<typeof createMessagesService>

// Any chat may be listed or followed, but no stored chat has an id that cannot be stored.
const chatIdProblem = (chatId: string | null | undefined) =>
  chatId == null || isStorableText(chatId) ? undefined : 'is not a chat id'

function textProblem(value: string, { min, max }: { min: number; max: number }) {
  // Characters as people count them: an emoji is one, not two UTF-16 units.
  const length = [...value].length
  if (length < min || length > max) return `must be from ${min} to ${max} characters long`
  return readableTextProblem(value)
}
