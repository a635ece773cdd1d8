import type { MessageRow } from '../../db/schema.js'
import { type Topic, topicSegment } from '../../platform/events.js'

/**
 * A chat's messages are published on a topic of their own, so an event costs work only
 * for that chat's subscribers; following every chat is a wildcard subscription.
 */
export const chatTopics = {
  messageAdded: (chatId: string): Topic<MessageAddedEvent> =>
    `chat/${topicSegment(chatId)}/messageAdded`,
  everyMessageAdded: 'chat/+/messageAdded' as Topic<MessageAddedEvent>,
}

/** A message as the outbox stores and the bus carries it: JSON, so its time as text. */
export type MessageEvent = Omit<MessageRow, 'createdAt'> & { createdAt: string }

export interface MessageAddedEvent {
  messageAdded: MessageEvent
}

export const fromMessageEvent = (event: MessageEvent): MessageRow => ({
  ...event,
  createdAt: new Date(event.createdAt),
})
