import { followTopic } from '../../graphql/subscriptions.js'
import type { EventBus } from '../../platform/infrastructure/events.js'
import type { DomainResolvers } from '../domain-module.js'
import { chatTopics, type MessageAddedEvent } from './chat-topics.js'
import type { MessagesService } from './messages-service.js'

export function createChatResolvers(
  messages: MessagesService,
  events: Pick<EventBus, 'subscribe'>,
) {
  return {
    Message: {
      id: (message) => String(message.id),
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
        resolve: (event: MessageAddedEvent) => event.messageAdded,
      },
    },
  } satisfies DomainResolvers
}
