import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'

/**
 * Secrets the service must read back (a TOTP secret, a webhook endpoint's signing
 * secret), sealed at rest with AES-256-GCM: a copy of the database alone reveals none,
 * and a sealed value altered by a byte fails to open instead of yielding another secret.
 *
 * Each purpose has a key of its own, derived by HKDF-SHA256 from one root secret, so a
 * value sealed for one purpose cannot be passed off as another's. Sealed values are
 * `v1.<iv>.<tag>.<ciphertext>`, each part base64url: the version leaves room for another
 * algorithm or key without guessing at what a stored value is
 * (docs/decisions/two-factor.md).
 */
export interface SecretBox {
  seal(plaintext: string): string
  /** Throws when the value was not sealed by this box, or was altered since. */
  open(sealed: string): string
}

const VERSION = 'v1'
const IV_BYTES = 12
const TAG_BYTES = 16
const ALGORITHM = 'aes-256-gcm'

export class SecretBoxError extends Error {
  override readonly name = 'SecretBoxError'
}

/**
 * A box for one purpose (`totp-secret`), keyed from `rootSecret`: DATA_ENCRYPTION_KEY,
 * or JWT_SECRET without it (config.ts).
 */
export function createSecretBox(rootSecret: string, purpose: string): SecretBox {
  const key = Buffer.from(
    hkdfSync('sha256', rootSecret, '', `catalog-chat-service secret-box ${VERSION} ${purpose}`, 32),
  )
  return {
    seal(plaintext) {
      const iv = randomBytes(IV_BYTES)
      const cipher = createCipheriv(ALGORITHM, key, iv)
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
      const parts = [iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString('base64url'))
      return [VERSION, ...parts].join('.')
    },

    open(sealed) {
      const [version, iv, tag, ciphertext, ...rest] = sealed.split('.')
      if (version !== VERSION || !iv || !tag || ciphertext === undefined || rest.length > 0) {
        throw new SecretBoxError(`Not a sealed value of version ${VERSION}`)
      }
      const ivBytes = Buffer.from(iv, 'base64url')
      const tagBytes = Buffer.from(tag, 'base64url')
      if (ivBytes.length !== IV_BYTES || tagBytes.length !== TAG_BYTES) {
        throw new SecretBoxError('A sealed value with an IV or tag of the wrong length')
      }
      const decipher = createDecipheriv(ALGORITHM, key, ivBytes, { authTagLength: TAG_BYTES })
      decipher.setAuthTag(tagBytes)
      try {
        const plain = decipher.update(Buffer.from(ciphertext, 'base64url'))
        return Buffer.concat([plain, decipher.final()]).toString('utf8')
      } catch {
        throw new SecretBoxError('A sealed value that was altered, or sealed with another key')
      }
    },
  }
}
