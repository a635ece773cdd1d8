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
  const verifier = createVerifier({ key: secret, algorithms: ['HS256'], cache: true })

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
      const userId = Number(claims.sub)
      if (!Number.isSafeInteger(userId) || (claims.role !== 'user' && claims.role !== 'admin')) {
        throw unauthenticated('The access token is invalid or expired')
      }
      return { userId, role: claims.role }
    },
  }
}

export type AccessTokens = ReturnType<typeof createAccessTokens>
