import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../src/config.js'
import { createSecretBox, SecretBoxError } from '../src/platform/secret-box.js'

const ROOT = 'a-root-secret-of-at-least-32-characters!'
const box = createSecretBox(ROOT, 'totp-secret')

/** `sealed` with one character of part `index` (1: IV, 2: tag, 3: ciphertext) changed. */
function altered(sealed: string, index: number): string {
  const parts = sealed.split('.')
  const part = parts[index] ?? ''
  const flipped = part[0] === 'A' ? 'B' : 'A'
  parts[index] = flipped + part.slice(1)
  return parts.join('.')
}

describe('secret box', () => {
  it('opens what it sealed, stored as v1.<iv>.<tag>.<ciphertext> in base64url', () => {
    const secret = 'JBSWY3DPEHPK3PXP-ünïcödé'
    const sealed = box.seal(secret)
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+$/)
    expect(sealed).not.toContain('JBSWY3DP')
    expect(box.open(sealed)).toBe(secret)
    expect(box.open(box.seal(''))).toBe('')
  })

  it('seals the same secret differently each time (a fresh IV)', () => {
    const seals = new Set(Array.from({ length: 20 }, () => box.seal('same')))
    expect(seals.size).toBe(20)
  })

  it.each([
    [1, 'the IV'],
    [2, 'the tag'],
    [3, 'the ciphertext'],
  ])('refuses a value whose %s part (%s) was altered', (index) => {
    const sealed = box.seal('a secret worth altering')
    expect(() => box.open(altered(sealed, index))).toThrow(SecretBoxError)
  })

  it('refuses a value sealed for another purpose or from another root secret', () => {
    const sealed = box.seal('a secret')
    expect(() => createSecretBox(ROOT, 'webhook-secret').open(sealed)).toThrow(SecretBoxError)
    const otherRoot = createSecretBox('another-root-secret-of-32-characters!!', 'totp-secret')
    expect(() => otherRoot.open(sealed)).toThrow(SecretBoxError)
  })

  it.each([
    'JBSWY3DPEHPK3PXP',
    '',
    'v2.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA.AAAA',
    'v1.AAAA.AAAAAAAAAAAAAAAAAAAAAA.AAAA',
    'v1.AAAAAAAAAAAAAAAA.AAAA.AAAA',
    'v1.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA',
    'v1.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA.AAAA.AAAA',
  ])('refuses %j, which it never sealed', (value) => {
    expect(() => box.open(value)).toThrow(SecretBoxError)
  })
})

describe('DATA_ENCRYPTION_KEY', () => {
  const jwtSecret = 'j'.repeat(32)

  it('is the root of sealed secrets when set, JWT_SECRET when not', () => {
    const key = 'k'.repeat(32)
    expect(loadConfig({ JWT_SECRET: jwtSecret }).dataEncryptionKey).toBe(jwtSecret)
    expect(loadConfig({ JWT_SECRET: jwtSecret, DATA_ENCRYPTION_KEY: key }).dataEncryptionKey).toBe(
      key,
    )
  })

  it('follows the random JWT_SECRET of a start without one, and the warning says so', () => {
    const config = loadConfig({})
    expect(config.dataEncryptionKey).toBe(config.auth.jwtSecret)
    expect(config.warnings.join('\n')).toContain('DATA_ENCRYPTION_KEY')
  })

  it('refuses a key shorter than 32 characters, saying what it takes', () => {
    const environment = { JWT_SECRET: jwtSecret, DATA_ENCRYPTION_KEY: 'k'.repeat(31) }
    expect(() => loadConfig(environment)).toThrow(ConfigError)
    expect(() => loadConfig(environment)).toThrow(
      'DATA_ENCRYPTION_KEY must be a secret of at least 32 characters',
    )
  })
})
