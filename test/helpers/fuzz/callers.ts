import fc from 'fast-check'
import { createSigner } from 'fast-jwt'
import { testEnvironment } from '../server.js'

/** Who sends a request: nobody, a signed-in user, an admin, or a token that proves nothing. */
export type Caller = 'anonymous' | 'user' | 'admin' | 'forged'
export const CALLERS: Caller[] = ['anonymous', 'user', 'admin', 'forged']

const base64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
const rightKey = testEnvironment.JWT_SECRET
const inAnHour = () => Math.floor(Date.now() / 1000) + 3600

function signed(key: string, claims: Record<string, unknown>): string {
  // No expiresIn here: the claims say exactly what each forgery holds.
  return createSigner({ key, algorithm: 'HS256' })(claims)
}

/**
 * Authorization headers that must not authenticate anyone: malformed, another scheme,
 * unsigned, signed with another key, expired, or signed but with claims this service
 * never writes (a hex subject, an unknown role, no expiry).
 */
function forgedAuthorizations(): string[] {
  const unsigned = `${base64url({ alg: 'none', typ: 'JWT' })}.${base64url({ sub: '1', role: 'admin', exp: inAnHour() })}.`
  return [
    'Bearer',
    'Bearer ',
    'Bearer  two  spaces',
    'Basic YWRtaW46cGFzc3dvcmQ=',
    'Bearer a.b.c',
    `Bearer ${'x'.repeat(4096)}`,
    `Bearer ${unsigned}`,
    `Bearer ${signed('another-secret-that-is-long-enough-for-hs256', { sub: '1', role: 'admin', exp: inAnHour() })}`,
    `Bearer ${signed(rightKey, { sub: '1', role: 'admin', exp: 1 })}`,
    `Bearer ${signed(rightKey, { sub: '0x1', role: 'admin', exp: inAnHour() })}`,
    `Bearer ${signed(rightKey, { sub: '1', role: 'root', exp: inAnHour() })}`,
    `Bearer ${signed(rightKey, { sub: '1', role: 'admin' })}`,
  ]
}

export interface Tokens {
  user: string
  admin: string
}

/** The Authorization header a caller sends, if any. */
export function authorizationArbitrary(
  caller: Caller,
  tokens: Tokens,
): fc.Arbitrary<string | undefined> {
  switch (caller) {
    case 'anonymous':
      return fc.constant(undefined)
    case 'user':
    case 'admin':
      // Read as each request is made: a logout-all in the run renews the caller's token.
      return fc.constant(caller).map((signedIn) => `Bearer ${tokens[signedIn]}`)
    case 'forged':
      return fc.constantFrom(...forgedAuthorizations())
  }
}

/** The status a secured operation answers a caller before reading its input, if any. */
export function refusalOf(roles: string[] | undefined, caller: Caller): 401 | 403 | undefined {
  if (roles === undefined) return undefined
  if (caller === 'anonymous' || caller === 'forged') return 401
  if (roles.length > 0 && !roles.includes(caller)) return 403
  return undefined
}

/** Callers the operation serves: with a role it names, or any when it is public. */
export const entitledCallers = (roles: string[] | undefined): Caller[] =>
  roles === undefined
    ? CALLERS
    : (['user', 'admin'] as const).filter((role) => roles.length === 0 || roles.includes(role))
