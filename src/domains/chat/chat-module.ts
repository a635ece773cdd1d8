import type { Infrastructure } from '../domain-module.js'
import { createChatResolvers } from './chat-resolvers.js'
import { createMessagesRepository } from './messages-repository.js'
import { type Accounts, createMessagesService } from './messages-service.js'

/** The GraphQL chat: messages stored, listed, and delivered live per chat. */
export function createChatModule(
  { database, events, outbox }: Pick<Infrastructure, 'database' | 'events' | 'outbox'>,
  { accounts }: { accounts: Accounts },
) {
  const messages = createMessagesService({
    messages: createMessagesRepository(database.db),
    outbox,
    accounts,
  })
  return { name: 'chat', resolvers: createChatResolvers(messages, events) }
}
