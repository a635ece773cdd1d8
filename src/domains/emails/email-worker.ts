import type { FastifyBaseLogger } from 'fastify'
import { DeliveryFailed, type EmailTransport, SMTP_TIMEOUTS_MS } from './email-transports.js'
import type { ClaimedEmail, EmailsRepository } from './emails-repository.js'

export interface EmailWorkerSettings {
  emails: EmailsRepository
  transport: EmailTransport
  log: FastifyBaseLogger
  pollIntervalMs: number
  retryBaseMs: number
  maxAttempts: number
}

/** Emails claimed per statement, and sent at once. */
const BATCH = 10
/** A claim outlasts any SMTP exchange (see SMTP_TIMEOUTS_MS) by a margin. */
const LEASE_MS =
  SMTP_TIMEOUTS_MS.connection + SMTP_TIMEOUTS_MS.greeting + SMTP_TIMEOUTS_MS.socket + 30_000
/** Backoff never waits longer than this between two attempts. */
const MAX_BACKOFF_MS = 60 * 60 * 1000

/**
 * Drains the emails outbox: every poll (or at once when woken by an enqueue on this
 * instance) it claims due emails, sends them, and records each outcome. One drain at a
 * time; asked during one, another follows it.
 */
export function createEmailWorker(settings: EmailWorkerSettings) {
  const { emails, transport, log, pollIntervalMs } = settings
  let timer: NodeJS.Timeout | undefined
  let draining: Promise<void> | undefined
  let again = false
  let stopped = false

  async function drainOnce(): Promise<void> {
    for (;;) {
      const claimed = await emails.claimDue(BATCH, LEASE_MS)
      await Promise.all(claimed.map((email) => deliver(email, settings)))
      if (claimed.length < BATCH || stopped) return
    }
  }

  function drain(): Promise<void> {
    if (stopped) return Promise.resolve()
    if (draining) {
      again = true
      return draining
    }
    draining = drainOnce()
      .catch((error: unknown) => {
        log.warn({ err: error }, 'the email outbox could not be drained; next poll')
      })
      .finally(() => {
        draining = undefined
        if (again) {
          again = false
          void drain()
        }
      })
    return draining
  }

  return {
    /** Sends what is due soon, without waiting for the next poll. */
    wake(): void {
      void drain()
    },
    async start(): Promise<void> {
      timer = setInterval(() => void drain(), pollIntervalMs)
      timer.unref()
      void drain()
    },
    /** Stops polling and waits for the sends in flight (bounded by the SMTP timeouts). */
    async stop(): Promise<void> {
      stopped = true
      clearInterval(timer)
      await draining
      transport.close()
    },
  }
}

async function deliver(email: ClaimedEmail, settings: EmailWorkerSettings): Promise<void> {
  const { emails, transport, log, retryBaseMs, maxAttempts } = settings
  try {
    await transport.send(email)
    await emails.markSent(email)
  } catch (error) {
    const failure =
      error instanceof DeliveryFailed ? error : new DeliveryFailed(String(error), false)
    const reason = failure.message.slice(0, 2000)
    if (failure.permanent || email.attempts >= maxAttempts) {
      log.warn({ emailId: email.id, attempts: email.attempts, reason }, 'email failed for good')
      await emails.markFailed(email, reason)
      return
    }
    const delayMs = Math.min(retryBaseMs * 2 ** (email.attempts - 1), MAX_BACKOFF_MS)
    log.info(
      { emailId: email.id, attempts: email.attempts, delayMs, reason },
      'email retried later',
    )
    await emails.retryLater(email, reason, delayMs)
  }
}
