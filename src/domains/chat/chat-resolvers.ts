import { followTopic } from '../../graphql/subscriptions.js'
import type { EventBus } from '../../platform/events.js'
import type { DomainResolvers } from '../module.js'
import { chatTopics, fromMessageEvent, type MessageAddedEvent } from './chat-topics.js'
import type { MessagesService } from './messages-service.js'

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
      sendMessage: (_root, args, context) => messages.send(args, context.principal),
    },
    Subscription: {
      messageAdded: {
        subscribe: (_root, { chatId }, context) => {
          messages.assertFollowable(chatId)
          return followTopic(
            events,
            chatId == null ? chatTopics.everyMessageAdded : chatTopics.messageAdded(chatId),
            context,
          )
        },
        resolve: (event: MessageAddedEvent) => fromMessageEvent(event.messageAdded),
      },
    },
  } satisfies DomainResolvers
}
