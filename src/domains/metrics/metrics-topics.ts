import type { Metrics } from '../../../generated/graphql.js'
import type { Topic } from '../../platform/infrastructure/events.js'

export interface MetricsUpdatedEvent {
  metricsUpdated: Metrics
}

/** One topic for every instance's figures: an admin follows them all. */
export const metricsTopics = {
  updated: 'metrics/updated' as Topic<MetricsUpdatedEvent>,
}
