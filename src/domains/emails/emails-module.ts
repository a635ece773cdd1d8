import type { Infrastructure } from '../domain-module.js'
import { logTransport, smtpTransport } from './email-transports.js'
import { createEmailWorker } from './email-worker.js'
import { createEmailHandlers } from './emails-handlers.js'
import { createEmailsRepository } from './emails-repository.js'
import { createEmailsService } from './emails-service.js'

/** Emails: queued in the database, delivered by a worker with retries (SMTP or the log). */
export function createEmailsModule({
  database,
  config,
  log,
}: Pick<Infrastructure, 'database' | 'config' | 'log'>) {
  const { smtpUrl, from, pollIntervalMs, retryBaseMs, maxAttempts } = config.emails
  const emails = createEmailsRepository(database.db)
  const worker = createEmailWorker({
    emails,
    transport: smtpUrl ? smtpTransport(smtpUrl, from) : logTransport(log),
    log,
    pollIntervalMs,
    retryBaseMs,
    maxAttempts,
  })
  const service = createEmailsService(emails, worker.wake)
  return {
    name: 'emails',
    handlers: createEmailHandlers(service),
    /** For the domains that email their users (account emails, in auth). */
    outbox: { queue: service.queue, wake: service.wake },
    start: worker.start,
    stop: worker.stop,
  }
}
