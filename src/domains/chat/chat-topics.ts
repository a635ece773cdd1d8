import type { MessageRow } from '../../db/schema.js'
import { type Topic, topicSegment } from '../../platform/events.js'

/**
 * A chat's messages are published on a topic of their own, so an event costs work only
 * for that chat's subscribers; following every chat is a wildcard subscription. The
 * row crosses Redis as msgpack, which keeps its Date.
 */
export const chatTopics = {
  messageAdded: (chatId: string): Topic<MessageAddedEvent> =>
    `chat/${topicSegment(chatId)}/messageAdded`,
  everyMessageAdded: 'chat/+/messageAdded' as Topic<MessageAddedEvent>,
}

export interface MessageAddedEvent {
  messageAdded: MessageRow
}
