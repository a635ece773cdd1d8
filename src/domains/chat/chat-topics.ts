import type { MessageRow } from '../../db/schema.js'

/**
 * Every new message of every chat; subscribers filter on the message's chatId. The row
 * crosses Redis as msgpack, which keeps its Date.
 */
export const MESSAGE_ADDED = 'MESSAGE_ADDED'

export interface MessageAddedEvent {
  messageAdded: MessageRow
}
