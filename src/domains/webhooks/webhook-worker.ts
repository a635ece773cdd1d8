import type { FastifyBaseLogger } from 'fastify'
import type { SecretBox } from '../../platform/secret-box.js'
import { ATTEMPT_TIMEOUT_MS, type AttemptOutcome, sendSigned } from './webhook-sender.js'
import type { TargetGuard } from './webhook-targets.js'
import type { ClaimedDelivery, WebhooksRepository } from './webhooks-repository.js'

export interface WebhookWorkerSettings {
  repository: WebhooksRepository
  guard: TargetGuard
  secrets: SecretBox
  log: FastifyBaseLogger
  /** The delays between a delivery's attempts (WEBHOOK_RETRY_SCHEDULE). */
  retryScheduleMs: readonly number[]
  /** Deliveries in flight at most on this instance (WEBHOOK_CONCURRENCY); 0 sends none. */
  concurrency: number
}

/** Picks up what other instances scheduled, and what a dead one left. */
const POLL_MS = 1000
/** Retries due sooner than this are woken for when due, not left to the next poll. */
const WAKE_WITHIN_MS = 10 * 60 * 1000
/**
 * A claim outlasts an attempt and the writing of its outcome, even on a slow database; an
 * instance that dies mid-attempt leaves the delivery due again when its lease ends.
 */
const LEASE_MS = ATTEMPT_TIMEOUT_MS + 50_000

/**
 * Sends due deliveries in the background, never more than `concurrency` at a time: each
 * poll, each wake-up and each finished attempt claims as many as there is room for. No
 * request waits on it, and a slow or dead receiver holds one slot for 10 s at most. A
 * database that stalls fails a round, which the next poll tries again.
 */
export function createWebhookWorker(settings: WebhookWorkerSettings) {
  const { repository, log, concurrency } = settings
  const inFlight = new Set<Promise<void>>()
  const stopping = new AbortController()
  const timers = new Set<NodeJS.Timeout>()
  let poller: NodeJS.Timeout | undefined
  let claiming = false
  let again = false
  let failing = false

  async function fill(): Promise<void> {
    if (stopping.signal.aborted || inFlight.size >= concurrency) return
    if (claiming) {
      again = true
      return
    }
    claiming = true
    try {
      const room = concurrency - inFlight.size
      const claimed = await repository.claimDue(room, LEASE_MS)
      if (failing) log.info('webhook deliveries go out again')
      failing = false
      for (const delivery of claimed) start(delivery)
      again ||= claimed.length === room
    } catch (error) {
      if (!failing) log.warn({ err: error }, 'webhook deliveries cannot be claimed now; next poll')
      failing = true
    } finally {
      claiming = false
    }
    if (again) {
      again = false
      void fill()
    }
  }

  function start(delivery: ClaimedDelivery) {
    const attempt = attemptDelivery(delivery, settings, stopping.signal, wakeIn)
      .catch((error: unknown) => {
        // Its lease runs out and it is due again: a repeat the receiver can spot.
        log.warn({ err: error, deliveryId: delivery.id }, 'a webhook outcome was not recorded')
      })
      .finally(() => {
        inFlight.delete(attempt)
        void fill()
      })
    inFlight.add(attempt)
  }

  /** Claims again when a retry this instance scheduled is due, if that is soon. */
  function wakeIn(ms: number) {
    if (ms > WAKE_WITHIN_MS || stopping.signal.aborted) return
    const timer = setTimeout(() => {
      timers.delete(timer)
      void fill()
    }, ms)
    timer.unref()
    timers.add(timer)
  }

  return {
    /** Claims now: new deliveries were recorded on this instance. */
    wake(): void {
      void fill()
    },
    async start(): Promise<void> {
      if (concurrency === 0) return
      poller = setInterval(() => void fill(), POLL_MS)
      poller.unref()
      void fill()
    },
    /** Stops claiming, cuts the attempts in flight short and hands them back, uncounted. */
    async stop(): Promise<void> {
      stopping.abort()
      clearInterval(poller)
      for (const timer of timers) clearTimeout(timer)
      await Promise.all(inFlight)
    },
  }
}

/** One attempt, and its outcome recorded: success, a retry on the schedule, or failure. */
async function attemptDelivery(
  delivery: ClaimedDelivery,
  { repository, guard, secrets, log, retryScheduleMs }: WebhookWorkerSettings,
  signal: AbortSignal,
  wakeIn: (ms: number) => void,
): Promise<void> {
  const body = JSON.stringify({
    type: delivery.type,
    timestamp: delivery.occurredAt.toISOString(),
    data: delivery.data,
  })
  const outcome: AttemptOutcome = await sendSigned(
    {
      url: delivery.url,
      secret: secrets.open(delivery.sealedSecret),
      eventId: delivery.eventId,
      body,
    },
    guard,
    signal,
  )
  if (outcome.interrupted) return repository.release(delivery)
  if (outcome.error === null) return repository.succeeded(delivery, outcome.statusCode ?? 200)
  const retryInMs =
    delivery.attempts < delivery.attemptsAllowed
      ? retryScheduleMs[Math.min(delivery.attempts, retryScheduleMs.length) - 1]
      : undefined
  const enabled = await repository.failed(delivery, outcome, retryInMs)
  const context = {
    deliveryId: delivery.id,
    endpointId: delivery.endpointId,
    attempts: delivery.attempts,
  }
  if (retryInMs === undefined)
    log.warn({ ...context, reason: outcome.error }, 'a webhook delivery failed')
  else wakeIn(retryInMs)
  if (!enabled) log.warn(context, 'a webhook endpoint was disabled after 5 days of failures')
}
