import type { Topic } from '../../platform/infrastructure/events.js'

/** A user coming online or going offline, as the bus carries it (JSON). */
export interface UserStatus {
  userId: number
  online: boolean
  /** ISO 8601; null while online. */
  lastSeen: string | null
}

export interface UserStatusChangedEvent {
  userStatusChanged: UserStatus
}

export const presenceTopics = {
  statusChanged: 'presence/userStatusChanged' as Topic<UserStatusChangedEvent>,
}
