import { type Topic, topicSegment } from '../../platform/infrastructure/events.js'
import type { Message } from './messages-repository.js'

/**
 * A chat's messages are published on a topic of their own, so an event costs work only
 * for that chat's subscribers; following every chat is a wildcard subscription.
 */
export const chatTopics = {
  messageAdded: (chatId: string): Topic<MessageAddedEvent> =>
    `chat/${topicSegment(chatId)}/messageAdded`,
  everyMessageAdded: 'chat/+/messageAdded' as Topic<MessageAddedEvent>,
}

/** A message as the outbox stores it and the bus carries it. */
export interface MessageAddedEvent {
  messageAdded: Message
  /**
   * The id of the chat's message before this one (0 before its first), by which a
   * subscriber knows whether it missed one; absent from events recorded before there was one.
   */
  previousId?: number
}
