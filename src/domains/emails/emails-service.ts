import type { components } from '../../../generated/openapi.js'
import type { Executor } from '../../db/database.js'
import type { EmailRow } from '../../db/schema.js'
import { notFound } from '../../platform/errors.js'
import type { EmailsRepository } from './emails-repository.js'

type EmailMessage = components['schemas']['EmailMessage']
type EmailSend = components['schemas']['EmailSend']

export function createEmailsService(emails: EmailsRepository, wakeWorker: () => void) {
  return {
    /**
     * Queues an email (the spec has checked its fields) and has the worker look now. In
     * a caller's transaction the worker may look before it commits, and then sends the
     * email at its next poll.
     */
    async queue({ to, subject, text }: EmailSend, executor?: Executor): Promise<EmailMessage> {
      const row = await emails.insert({ recipient: to, subject, text }, executor)
      wakeWorker()
      return toEmailMessage(row)
    },

    /** Has the worker look now, for emails a statement of another domain queued. */
    wake: wakeWorker,

    async get(id: number): Promise<EmailMessage> {
      const row = await emails.find(id)
      if (!row) throw notFound(`No email ${id}`)
      return toEmailMessage(row)
    },
  }
}

export type EmailsService = ReturnType<typeof createEmailsService>

function toEmailMessage(row: EmailRow): EmailMessage {
  return {
    id: row.id,
    to: row.recipient,
    subject: row.subject,
    status: row.status,
    attempts: row.attempts,
    lastError: row.lastError,
    createdAt: row.createdAt.toISOString(),
    nextAttemptAt: row.status === 'queued' ? row.nextAttemptAt.toISOString() : null,
    sentAt: row.sentAt?.toISOString() ?? null,
  }
}
