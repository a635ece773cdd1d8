import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { Webhook } from 'standardwebhooks'
import { RefusedTarget, type TargetGuard } from './webhook-targets.js'

/** An attempt succeeds on a 2xx within this long; anything slower is a failure. */
export const ATTEMPT_TIMEOUT_MS = 10_000
/** The most of an answer's body that is read (and thrown away) before the socket is closed. */
const MAX_ANSWER_BYTES = 64 * 1024

/** One signed POST: the event's id and body, under the endpoint's secret. */
export interface SignedRequest {
  url: string
  /** `whsec_…` */
  secret: string
  eventId: string
  body: string
}

/** What an attempt came to: the status it got, and why it failed when it did. */
export interface AttemptOutcome {
  statusCode: number | null
  /** Null for a success. */
  error: string | null
  /** Cut short by `signal` (a shutdown), not by the receiver. */
  interrupted: boolean
}

/**
 * The headers of the Standard Webhooks specification, signed by its reference library:
 * `webhook-signature` is `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, keyed
 * with the secret's decoded bytes.
 */
export function signedHeaders({ secret, eventId, body }: SignedRequest, at: Date) {
  return {
    'content-type': 'application/json',
    'user-agent': 'catalog-chat-service-webhooks',
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(eventId, at, body),
  }
}

/**
 * POSTs one signed event, never following a redirect, connecting only to an address the
 * guard passed, within ATTEMPT_TIMEOUT_MS; never throws. `signal` cuts it short.
 */
export async function sendSigned(
  signed: SignedRequest,
  guard: TargetGuard,
  signal: AbortSignal,
): Promise<AttemptOutcome> {
  const url = new URL(signed.url)
  try {
    guard.checkLiteral(url)
  } catch (error) {
    return failure((error as RefusedTarget).message)
  }
  const deadline = AbortSignal.any([signal, AbortSignal.timeout(ATTEMPT_TIMEOUT_MS)])
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise<AttemptOutcome>((resolve) => {
    const request = send(url, {
      method: 'POST',
      headers: signedHeaders(signed, new Date()),
      lookup: guard.lookup,
      agent: false,
      signal: deadline,
    })
    request.on('response', (answer) => {
      void readAnswer(answer).then(() => resolve(outcomeOf(answer.statusCode ?? 0)))
    })
    request.on('error', (error) => {
      if (signal.aborted) resolve({ statusCode: null, error: 'cut short', interrupted: true })
      else resolve(failure(describe(error, deadline.aborted)))
    })
    request.end(signed.body)
  })
}

const failure = (error: string): AttemptOutcome => ({ statusCode: null, error, interrupted: false })

function outcomeOf(statusCode: number): AttemptOutcome {
  if (statusCode >= 200 && statusCode < 300) return { statusCode, error: null, interrupted: false }
  const error =
    statusCode >= 300 && statusCode < 400
      ? `answered ${statusCode}, a redirect, which is not followed`
      : `answered ${statusCode}`
  return { statusCode, error, interrupted: false }
}

/** Reads an answer to its end, or to MAX_ANSWER_BYTES, whichever comes first. */
function readAnswer(answer: IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    let read = 0
    answer.on('data', (chunk: Buffer) => {
      read += chunk.length
      if (read > MAX_ANSWER_BYTES) answer.destroy()
    })
    answer.on('end', resolve)
    answer.on('close', resolve)
    answer.on('error', () => resolve())
  })
}

function describe(error: Error, timedOut: boolean): string {
  if (error instanceof RefusedTarget) return `refused target: ${error.message}`
  if (timedOut) return `no answer within ${ATTEMPT_TIMEOUT_MS / 1000} s`
  const code = (error as NodeJS.ErrnoException).code
  return (code ? `${error.message} (${code})` : error.message).slice(0, 2000)
}
