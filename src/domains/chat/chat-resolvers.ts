import { followInOrder } from '../../graphql/resumable.js'
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
        subscribe: async (_root, args, context) => {
          const start = await messages.startOf(args)
          return followInOrder(
            events,
            start ? chatTopics.messageAdded(start.scope) : chatTopics.everyMessageAdded,
            context,
            messages.ordered,
            { start, tooLong: messages.replayTooLong },
          )
        },
        resolve: (event: MessageAddedEvent) => event.messageAdded,
      },
    },
  } satisfies DomainResolvers
}
