import type { Infrastructure } from '../module.js'
import { createChatResolvers } from './chat-resolvers.js'
import { createMessagesRepository } from './messages-repository.js'
import { createMessagesService } from './messages-service.js'

/** The GraphQL chat: messages stored, listed, and delivered live per chat. */
export function createChatModule({
  database,
  events,
}: Pick<Infrastructure, 'database' | 'events'>) {
  const messages = createMessagesService({
    messages: createMessagesRepository(database.db),
    events,
  })
  return { name: 'chat', resolvers: createChatResolvers(messages, events) }
}
