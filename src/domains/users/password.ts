import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto'
import { MAX_PASSWORD_HASH_COST } from '../../config.js'

const BLOCK_SIZE = 8
const KEY_LENGTH = 64
// scrypt needs 128·N·r bytes, and Node refuses past 32 MiB unless told: room for the
// highest cost, and no more, whatever N a stored hash names.
const MAX_MEMORY = 256 * 2 ** MAX_PASSWORD_HASH_COST * BLOCK_SIZE

function derive(
  password: string,
  salt: Buffer,
  { N, r, p }: Required<Pick<ScryptOptions, 'N' | 'r' | 'p'>>,
) {
  return new Promise<Buffer>((resolve, reject) => {
    scrypt(
      password.normalize('NFKC'),
      salt,
      KEY_LENGTH,
      { N, r, p, maxmem: MAX_MEMORY },
      (error, key) => (error ? reject(error) : resolve(key)),
    )
  })
}

/** Password hashes made at a cost of 2^`costLog2` (config's PASSWORD_HASH_COST). */
export function createPasswords(costLog2: number) {
  const cost = { N: 2 ** costLog2, r: BLOCK_SIZE, p: 1 }

  /** `scrypt$N$r$p$salt$hash`, so the cost can rise later without breaking old hashes. */
  async function hash(password: string): Promise<string> {
    const salt = randomBytes(16)
    const key = await derive(password, salt, cost)
    return ['scrypt', cost.N, cost.r, cost.p, salt.toString('base64'), key.toString('base64')].join(
      '$',
    )
  }

  async function verify(password: string, stored: string): Promise<boolean> {
    const [algorithm, N, r, p, salt, expectedBase64] = stored.split('$')
    if (algorithm !== 'scrypt' || !salt || !expectedBase64) return false
    const expected = Buffer.from(expectedBase64, 'base64')
    const key = await derive(password, Buffer.from(salt, 'base64'), {
      N: Number(N),
      r: Number(r),
      p: Number(p),
    })
    return key.length === expected.length && timingSafeEqual(key, expected)
  }

  // A hash of no one's password, so a login for an unknown email costs the same time.
  const decoyHash = hash(randomBytes(16).toString('hex'))

  return {
    hash,
    verify,
    /** Checks a password against an account's hash, or against the decoy when there is none. */
    verifyOrDecoy: async (password: string, stored: string | undefined) =>
      verify(password, stored ?? (await decoyHash)),
  }
}

export type Passwords = ReturnType<typeof createPasswords>
