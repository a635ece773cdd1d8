import type { FastifyBaseLogger } from 'fastify'
import { createTransport } from 'nodemailer'
import type { EmailRow } from '../../db/schema.js'

/** A refusal of one delivery: `permanent` when retrying cannot help (an SMTP 5xx). */
export class DeliveryFailed extends Error {
  override name = 'DeliveryFailed'
  constructor(
    message: string,
    readonly permanent: boolean,
  ) {
    super(message)
  }
}

export interface EmailTransport {
  /** Resolves once the email is accepted; throws DeliveryFailed otherwise. */
  send(email: EmailRow): Promise<void>
  close(): void
}

/**
 * The longest an SMTP exchange may take, in its three phases: the worker's lease on an
 * email outlasts their sum, so no other instance takes it over mid-send.
 */
export const SMTP_TIMEOUTS_MS = { connection: 10_000, greeting: 10_000, socket: 20_000 }

/** Real delivery through the SMTP server of `url`, from `from`. */
export function smtpTransport(url: string, from: string): EmailTransport {
  const transporter = createTransport({
    url,
    connectionTimeout: SMTP_TIMEOUTS_MS.connection,
    greetingTimeout: SMTP_TIMEOUTS_MS.greeting,
    socketTimeout: SMTP_TIMEOUTS_MS.socket,
  })
  const domain = from.split('@')[1] ?? 'localhost'
  return {
    async send(email) {
      try {
        await transporter.sendMail({
          from,
          to: email.recipient,
          subject: email.subject,
          text: email.text,
          // One id per email, whatever the attempt: a receiver can spot a repeat.
          messageId: `<email-${email.id}.${email.createdAt.getTime()}@${domain}>`,
        })
      } catch (error) {
        const { message, responseCode } = error as { message: string; responseCode?: number }
        throw new DeliveryFailed(message, responseCode !== undefined && responseCode >= 500)
      }
    },
    close: () => transporter.close(),
  }
}

/** Without SMTP_URL: each email is "delivered" as a line of the log (never its text). */
export function logTransport(log: FastifyBaseLogger): EmailTransport {
  return {
    async send(email) {
      log.info({ emailId: email.id, to: email.recipient, subject: email.subject }, 'email sent')
    },
    close() {},
  }
}
