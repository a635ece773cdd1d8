import type {} from 'mercurius'
import { type AccessTokens, bearerTokenOf, type Principal } from '../platform/access-tokens.js'
import { unauthenticated } from '../platform/errors.js'

/** What every resolver receives, over HTTP and over WebSocket alike. */
export interface GraphQLContext {
  /** The caller, when a valid token came with the request or the connection. */
  principal: Principal | null
  /** Ends the caller's WebSocket when it reads slower than events arrive; absent over HTTP. */
  closeSlowConsumer?: () => void
  /** Why the request's bearer token was refused; the operation then fails UNAUTHENTICATED. */
  tokenError?: Error
}

declare module 'mercurius' {
  interface MercuriusContext extends GraphQLContext {}
}

/** The principal of an optional token: none is anonymous, a bad one is refused. */
export function principalOf(accessTokens: AccessTokens, token: unknown): Principal | null {
  if (token === undefined || token === null || token === '') return null
  if (typeof token !== 'string') throw unauthenticated('authToken must be a string')
  // A bare token (`authToken`) or an Authorization header's value.
  return accessTokens.verify(token.includes(' ') ? (bearerTokenOf(token) ?? '') : token)
}

/** The context of an HTTP request: a refused token is kept to fail the operation with. */
export function httpContext(accessTokens: AccessTokens, authorization: unknown): GraphQLContext {
  try {
    return { principal: principalOf(accessTokens, authorization) }
  } catch (error) {
    return { principal: null, tokenError: error as Error }
  }
}
