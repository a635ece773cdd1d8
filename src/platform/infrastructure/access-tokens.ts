import { createSigner, createVerifier } from 'fast-jwt'
import type { components } from '../../../generated/openapi.js'
import { unauthenticated, withoutStacks } from '../errors.js'
import { setNewest } from '../newest-entries.js'

export type Role = components['schemas']['Role']

/** Who is calling, as an access token proves. */
export interface Principal {
  userId: number
  role: Role
}

/** A principal as its access token carries it: the session it belongs to, and its end. */
export interface TokenPrincipal extends Principal {
  /** The account's session version when the token was issued (users.session_version). */
  sessionVersion: number
  /** When the token expires, in ms since the epoch. */
  expiresAt: number
}

export interface AccessTokenSettings {
  secret: string
  ttlSeconds: number
}

const SCHEME = 'bearer '

/**
 * The token of an `Authorization: Bearer <token>` header; undefined for any other form:
 * the scheme in any case, then a token without spaces. (Not a regular expression: it
 * ran over the whole token on every request.)
 */
export function bearerTokenOf(header: string | undefined): string | undefined {
  if (header === undefined || header.length <= SCHEME.length) return undefined
  const scheme = header.slice(0, SCHEME.length).toLowerCase()
  if (scheme !== SCHEME || header.includes(' ', SCHEME.length)) return undefined
  return header.slice(SCHEME.length)
}

export function createAccessTokens({ secret, ttlSeconds }: AccessTokenSettings) {
  const signer = createSigner({ key: secret, algorithm: 'HS256', expiresIn: ttlSeconds * 1000 })
  // A token without an expiry would never end; one without a subject names no one; one
  // without its issue time cannot show it lives no longer than ttlSeconds.
  const verifier = createVerifier({
    key: secret,
    algorithms: ['HS256'],
    requiredClaims: ['exp', 'iat', 'sub', 'role'],
  })
  const verified = createVerifiedTokens(VERIFIED_TOKENS_KEPT)

  return {
    ttlSeconds,
    sign(principal: Principal & Pick<TokenPrincipal, 'sessionVersion'>): string {
      return signer({
        sub: String(principal.userId),
        role: principal.role,
        sv: principal.sessionVersion,
      })
    },
    /** The token's principal; a forged, malformed or expired token is UNAUTHENTICATED. */
    verify(token: string): TokenPrincipal {
      const known = verified.get(token)
      if (known) return known
      let claims: Claims
      try {
        claims = withoutStacks(() => verifier(token))
      } catch {
        throw unauthenticated('The access token is invalid or expired')
      }
      const userId = userIdOf(claims.sub)
      const sessionVersion = sessionVersionOf(claims.sv)
      if (
        userId === undefined ||
        sessionVersion === undefined ||
        !isRole(claims.role) ||
        !livesWithin(claims, ttlSeconds)
      ) {
        throw unauthenticated('The access token is invalid or expired')
      }
      const expiresAt = claims.exp * 1000
      const principal: TokenPrincipal = { userId, role: claims.role, sessionVersion, expiresAt }
      verified.set(token, principal)
      return principal
    },
  }
}

export type AccessTokens = ReturnType<typeof createAccessTokens>

interface Claims {
  sub?: unknown
  role?: unknown
  sv?: unknown
  exp: number
  iat: number
}

/** How far another instance's clock may run ahead of this one's. */
const CLOCK_SKEW_SECONDS = 60

/**
 * Whether the token lives no longer than the service issues them for, whoever signed
 * it: a key that leaked, or a signer misconfigured once, must not mint a token that
 * outlives every rotation. Issued in the future, it would live past `exp − iat` from now.
 */
function livesWithin({ exp, iat }: Claims, ttlSeconds: number): boolean {
  if (typeof iat !== 'number' || typeof exp !== 'number') return false
  return exp - iat <= ttlSeconds && iat <= Date.now() / 1000 + CLOCK_SKEW_SECONDS
}

const isRole = (role: unknown): role is Role => role === 'user' || role === 'admin'

/** A token issued before sessions had versions carries none: it belongs to the first. */
const sessionVersionOf = (claim: unknown): number | undefined => {
  if (claim === undefined) return 0
  return Number.isSafeInteger(claim) && (claim as number) >= 0 ? (claim as number) : undefined
}

/** As many as fast-jwt's own cache keeps: a few hundred kilobytes at most. */
const VERIFIED_TOKENS_KEPT = 1000

/**
 * Tokens already verified, keyed by the token itself, until they expire; the oldest is
 * forgotten first when full. fast-jwt's own cache keys each token by a SHA-512 of it,
 * which was most of what a cached check cost, and it warns at every start when given a
 * cheaper key. A token of an ended session stays here: live-accounts.ts refuses its
 * session version on every path, so nothing needs to be forgotten when sessions end.
 */
function createVerifiedTokens(capacity: number) {
  const entries = new Map<string, TokenPrincipal>()
  return {
    get(token: string): TokenPrincipal | undefined {
      const principal = entries.get(token)
      if (!principal) return undefined
      if (Date.now() < principal.expiresAt) return principal
      entries.delete(token)
      return undefined
    },
    set(token: string, principal: TokenPrincipal) {
      setNewest(entries, token, principal, capacity)
    },
  }
}

/** A subject as this service writes it: the user id in decimal digits, nothing else. */
function userIdOf(subject: unknown): number | undefined {
  if (typeof subject !== 'string' || !/^[1-9]\d{0,9}$/.test(subject)) return undefined
  const id = Number(subject)
  return id <= 2 ** 31 - 1 ? id : undefined
}
