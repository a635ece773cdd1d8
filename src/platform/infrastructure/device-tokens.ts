import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

export interface DeviceTokenSettings {
  /** The service's signing secret; device tokens are signed with a key derived from it. */
  secret: string
  ttlSeconds: number
}

/** Longer than any token this service issues: anything longer is not read at all. */
const LONGEST_TOKEN = 256

/**
 * OWASP's device cookies (Slow Down Online Guessing Attacks with Device Cookies): a
 * client that once logged in to an account holds `NONCE.EXPIRY.HMAC(key, ACCOUNT.NONCE.EXPIRY)`,
 * and its later attempts on that account are budgeted per device, so strangers who spend
 * the account's budget do not lock its owner out. Signed, not stored: nothing to look
 * up or clean up. The account is its email in lower case, as the login budget names it.
 */
export function createDeviceTokens({ secret, ttlSeconds }: DeviceTokenSettings) {
  // A key of their own: a device token can never pass for anything else the secret signs.
  const key = createHmac('sha256', secret).update('device tokens').digest()
  const macOf = (account: string, nonce: string, expiresAt: string) =>
    createHmac('sha256', key).update(`${account}.${nonce}.${expiresAt}`).digest()

  return {
    /** A new device token for the account, valid ttlSeconds. */
    issue(account: string): string {
      const nonce = randomBytes(16).toString('base64url')
      const expiresAt = String(Math.floor(Date.now() / 1000) + ttlSeconds)
      return `${nonce}.${expiresAt}.${macOf(account, nonce, expiresAt).toString('base64url')}`
    },

    /**
     * The device a token names, when it is a valid, unexpired token of that account;
     * undefined for anything else, which then counts as no token at all.
     */
    deviceOf(token: unknown, account: string): string | undefined {
      if (typeof token !== 'string' || token.length > LONGEST_TOKEN) return undefined
      const [nonce, expiresAt, mac, ...rest] = token.split('.')
      if (!nonce || !expiresAt || !mac || rest.length > 0) return undefined
      if (!/^\d{1,12}$/.test(expiresAt) || Number(expiresAt) * 1000 <= Date.now()) return undefined
      const given = Buffer.from(mac, 'base64url')
      const expected = macOf(account, nonce, expiresAt)
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined
      return nonce
    },
  }
}

export type DeviceTokens = ReturnType<typeof createDeviceTokens>
