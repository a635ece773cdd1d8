import { describe, expect, it } from 'vitest'
import { createPasswords } from '../src/domains/users/password.js'

describe('password hashes', () => {
  const passwords = createPasswords(10)

  it('records the scrypt cost they were made at, and verify only their own password', async () => {
    const stored = await passwords.hash('correct horse')
    expect(stored).toMatch(/^scrypt\$1024\$8\$1\$[A-Za-z0-9+/]+=*\$[A-Za-z0-9+/]+=*$/)
    expect(await passwords.verify('correct horse', stored)).toBe(true)
    expect(await passwords.verify('correct horsf', stored)).toBe(false)
    expect(await passwords.hash('correct horse')).not.toBe(stored)
  })

  it('verify a hash made at another cost by the cost it records', async () => {
    const stored = await createPasswords(12).hash('battery staple')
    expect(stored.startsWith('scrypt$4096$')).toBe(true)
    expect(await passwords.verify('battery staple', stored)).toBe(true)
  })

  it('refuse what is not one of their hashes, and check an absent one against the decoy', async () => {
    expect(await passwords.verify('anything', 'bcrypt$2b$10$abc')).toBe(false)
    expect(await passwords.verify('anything', '')).toBe(false)
    expect(await passwords.verifyOrDecoy('anything', undefined)).toBe(false)
  })

  it('refuse a stored hash that asks scrypt for more memory than the highest cost', async () => {
    const [, , r, p, salt, key] = (await passwords.hash('pw')).split('$')
    await expect(
      passwords.verify('pw', ['scrypt', 2 ** 20, r, p, salt, key].join('$')),
    ).rejects.toThrow()
  })
})
