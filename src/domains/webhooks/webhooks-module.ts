import { createSecretBox } from '../../platform/secret-box.js'
import type { Infrastructure } from '../domain-module.js'
import { isWebhookTopic, webhookEventOf } from './webhook-events.js'
import { createTargetGuard } from './webhook-targets.js'
import { createWebhookWorker } from './webhook-worker.js'
import { createWebhookHandlers } from './webhooks-handlers.js'
import { createWebhooksRepository } from './webhooks-repository.js'
import { createWebhooksService } from './webhooks-service.js'

/**
 * Outgoing webhooks (Standard Webhooks): endpoints admins register, fed by the outbox's
 * order and product events, each delivered once per endpoint by whichever instance
 * claims it, signed, and retried on WEBHOOK_RETRY_SCHEDULE.
 */
export function createWebhooksModule({
  database,
  config,
  log,
  outbox,
  resolveHost,
}: Pick<Infrastructure, 'database' | 'config' | 'log' | 'outbox' | 'resolveHost'>) {
  const { retryScheduleMs, allowPrivateTargets, concurrency } = config.webhooks
  const repository = createWebhooksRepository(database.db)
  const guard = createTargetGuard({ allowPrivate: allowPrivateTargets, resolve: resolveHost })
  const secrets = createSecretBox(config.dataEncryptionKey, 'webhook-endpoint-secret')
  const worker = createWebhookWorker({
    repository,
    guard,
    secrets,
    log,
    retryScheduleMs,
    concurrency,
  })
  outbox.tap({
    wants: isWebhookTopic,
    async take(tx, rows) {
      const events = rows.flatMap((row) => webhookEventOf(row) ?? [])
      await repository.recordEvents(tx, events, 1 + retryScheduleMs.length)
    },
    afterCommit: worker.wake,
  })
  return {
    name: 'webhooks',
    handlers: createWebhookHandlers(createWebhooksService({ repository, guard, secrets })),
    start: worker.start,
    stop: worker.stop,
  }
}
