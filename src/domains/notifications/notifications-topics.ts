import type { components } from '../../../generated/openapi.js'
import type { Topic } from '../../platform/infrastructure/events.js'

/** A notification as both APIs show it and the bus carries it (JSON). */
export type Notification = components['schemas']['Notification']

export interface NotificationAddedEvent {
  notificationAdded: Notification
  /**
   * The id of the user's notification before this one (0 before the first), by which a
   * subscriber knows whether it missed one; absent from events recorded before there was one.
   */
  previousId?: number
}

/** Each user's notifications on a topic of their own: an event reaches only its owner. */
export const notificationTopics = {
  added: (userId: number): Topic<NotificationAddedEvent> => `user/${userId}/notificationAdded`,
}
