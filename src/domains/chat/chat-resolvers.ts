import type { Resolvers } from '../../../generated/graphql.js'
import { type EventBus, filtered } from '../../platform/events.js'
import { MESSAGE_ADDED, type MessageAddedEvent } from './chat-topics.js'
import type { MessagesService } from './messages-service.js'

/** Events held for one subscriber before it counts as too slow and is cut off. */
export const MAX_QUEUED_EVENTS = 1000

export function createChatResolvers(
  messages: MessagesService,
  events: Pick<EventBus, 'subscribe'>,
) {
  return {
    Message: {
      id: (row) => String(row.id),
      createdAt: (row) => row.createdAt.toISOString(),
    },
    Query: {
      messages: (_root, args) => messages.list(args),
    },
    Mutation: {
      sendMessage: (_root, args) => messages.send(args),
    },
    Subscription: {
      messageAdded: {
        subscribe: async (_root, { chatId }, context) => {
          const source = await events.subscribe(MESSAGE_ADDED, {
            maxQueued: MAX_QUEUED_EVENTS,
            onOverflow: () => context.closeSlowConsumer?.(),
          })
          return filtered<MessageAddedEvent>(
            source,
            (event) => chatId == null || event.messageAdded.chatId === chatId,
          )
        },
      },
    },
  } satisfies Resolvers
}
