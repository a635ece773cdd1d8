import { createHmac, timingSafeEqual } from 'node:crypto'
import { unauthenticated } from './errors.js'

/** How far a delivery's timestamp may be from this server's clock, either way. */
export const TIMESTAMP_TOLERANCE_SECONDS = 5 * 60

export interface SignedDelivery {
  /** `X-Webhook-Timestamp`: unix seconds, when the sender signed. */
  timestamp: string | undefined
  /** `X-Webhook-Signature`: `sha256=<hex>`. */
  signature: string | undefined
  /** The body's exact bytes. */
  body: Buffer
}

/**
 * Checks a webhook as its sender signed it: an HMAC-SHA256 with the shared secret of
 * `<timestamp>.<body>`, compared in constant time, and a timestamp close enough to now
 * that a captured delivery cannot be replayed later. Anything else is UNAUTHENTICATED.
 */
export function verifyWebhookSignature(
  secret: string,
  { timestamp, signature, body }: SignedDelivery,
  nowSeconds = Date.now() / 1000,
): void {
  const signedAt = timestamp && /^\d{1,12}$/.test(timestamp) ? Number(timestamp) : undefined
  if (signedAt === undefined) throw unauthenticated('X-Webhook-Timestamp must be unix seconds')
  if (Math.abs(nowSeconds - signedAt) > TIMESTAMP_TOLERANCE_SECONDS) {
    throw unauthenticated('X-Webhook-Timestamp is more than 5 minutes from now')
  }
  const given = /^sha256=([0-9a-f]{64})$/i.exec(signature ?? '')?.[1]
  if (!given) throw unauthenticated('X-Webhook-Signature must be sha256=<64 hex digits>')
  const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest()
  if (!timingSafeEqual(Buffer.from(given, 'hex'), expected)) {
    throw unauthenticated('X-Webhook-Signature does not match the body')
  }
}
