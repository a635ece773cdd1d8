import { and, eq } from 'drizzle-orm'
import type { Executor } from '../../db/database.js'
import { webhookDeliveries } from '../../db/schema.js'

export interface Delivery {
  source: string
  /** The id of the event the delivery carries, as its sender signed it. */
  eventId: string
  eventType: string
}

export function createWebhookDeliveriesRepository() {
  const ofDelivery = ({ source, eventId }: Delivery) =>
    and(eq(webhookDeliveries.source, source), eq(webhookDeliveries.eventId, eventId))

  return {
    /**
     * Records a delivery in the caller's transaction: undefined when it is new, the first
     * receipt when it came before. A repeat arriving meanwhile waits for this transaction.
     */
    async claim(executor: Executor, delivery: Delivery): Promise<{ applied: boolean } | undefined> {
      const claimed = await executor
        .insert(webhookDeliveries)
        .values({ ...delivery, applied: false })
        .onConflictDoNothing()
        .returning({ applied: webhookDeliveries.applied })
      if (claimed.length > 0) return undefined
      const [first] = await executor
        .select({ applied: webhookDeliveries.applied })
        .from(webhookDeliveries)
        .where(ofDelivery(delivery))
      if (!first) throw new Error('A webhook delivery in conflict has no row')
      return first
    },

    async markApplied(executor: Executor, delivery: Delivery): Promise<void> {
      await executor.update(webhookDeliveries).set({ applied: true }).where(ofDelivery(delivery))
    },
  }
}

export type WebhookDeliveriesRepository = ReturnType<typeof createWebhookDeliveriesRepository>
