import { createSigner, createVerifier } from 'fast-jwt'
import type { components } from '../../generated/openapi.js'
import { unauthenticated } from './errors.js'

export type Role = components['schemas']['Role']

/** Who is calling, as an access token proves. */
export interface Principal {
  userId: number
  role: Role
}

export interface AccessTokenSettings {
  secret: string
  ttlSeconds: number
}

/** The token of an `Authorization: Bearer <token>` header; undefined for any other form. */
export function bearerTokenOf(header: string | undefined): string | undefined {
  const [scheme, token, ...rest] = header?.split(' ') ?? []
  return scheme?.toLowerCase() === 'bearer' && token && rest.length === 0 ? token : undefined
}

export function createAccessTokens({ secret, ttlSeconds }: AccessTokenSettings) {
  const signer = createSigner({ key: secret, algorithm: 'HS256', expiresIn: ttlSeconds * 1000 })
  // A token without an expiry would never end; one without a subject names no one.
  // Verified tokens are cached by the token itself: fast-jwt's default key, a SHA-512 of
  // it, was most of what a cached check cost (7% of an authenticated 400's CPU), and a
  // thousand keys of a few hundred bytes are nothing to hold.
  const verifier = createVerifier({
    key: secret,
    algorithms: ['HS256'],
    requiredClaims: ['exp', 'sub', 'role'],
    cache: true,
    cacheKeyBuilder: (token: string) => token,
  })

  return {
    ttlSeconds,
    sign(principal: Principal): string {
      return signer({ sub: String(principal.userId), role: principal.role })
    },
    /** The token's principal; a forged, malformed or expired token is UNAUTHENTICATED. */
    verify(token: string): Principal {
      let claims: { sub?: unknown; role?: unknown }
      try {
        claims = verifier(token)
      } catch {
        throw unauthenticated('The access token is invalid or expired')
      }
      const userId = userIdOf(claims.sub)
      if (userId === undefined || (claims.role !== 'user' && claims.role !== 'admin')) {
        throw unauthenticated('The access token is invalid or expired')
      }
      return { userId, role: claims.role }
    },
  }
}

export type AccessTokens = ReturnType<typeof createAccessTokens>

/** A subject as this service writes it: the user id in decimal digits, nothing else. */
function userIdOf(subject: unknown): number | undefined {
  if (typeof subject !== 'string' || !/^[1-9]\d{0,9}$/.test(subject)) return undefined
  const id = Number(subject)
  return id <= 2 ** 31 - 1 ? id : undefined
}
