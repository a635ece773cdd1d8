import type { Message } from '../../../generated/graphql.js'

/** Every new message of every chat; subscribers filter on the message's chatId. */
export const MESSAGE_ADDED = 'MESSAGE_ADDED'

export interface MessageAddedEvent {
  messageAdded: Message
}
