import type {} from 'mercurius'
import { unauthenticated } from '../platform/errors.js'
import {
  type AccessTokens,
  bearerTokenOf,
  type Principal,
  type TokenPrincipal,
} from '../platform/infrastructure/access-tokens.js'
import type { LiveAccounts } from '../platform/infrastructure/live-accounts.js'
import { createLoaderSet, type GraphQLLoaders, type LoaderSet } from './loaders.js'
import type { LiveSubscriptions } from './websocket/live-subscriptions.js'

/**
 * What every resolver receives, whichever path carried the operation: HTTP, the
 * `graphql-transport-ws` subprotocol or the legacy `graphql-ws` one.
 */
export interface GraphQLContext {
  /** The caller, when a valid token came with the request or the connection. */
  principal: Principal | null
  /** The HTTP request's id, or the WebSocket upgrade request's: the logs' reqId. */
  requestId: string
  /** Batched fields (see loaders.ts); fresh batches for every operation and event. */
  loaders: LoaderSet
  /** Ends the caller's WebSocket when it reads slower than events arrive; absent over HTTP. */
  closeSlowConsumer?: () => void
  /** The live subscriptions of the caller's WebSocket, counted and capped; absent over HTTP. */
  subscriptions?: LiveSubscriptions
  /** Why the request's bearer token was refused; the operation then fails UNAUTHENTICATED. */
  tokenError?: Error
}

declare module 'mercurius' {
  interface MercuriusContext extends GraphQLContext {}
}

/** How a caller may prove who it is: `authToken` of connection_init, or a bearer header. */
export interface Credentials {
  authToken?: unknown
  authorization?: string | undefined
}

export type ContextFields = Omit<GraphQLContext, 'loaders' | 'principal' | 'tokenError'>

export function createContextFactory(
  accessTokens: AccessTokens,
  liveAccounts: LiveAccounts,
  loaders: GraphQLLoaders,
) {
  /**
   * The principal the credentials' token proves (authToken first): none is anonymous, a
   * bad one throws. Whether its account still exists is confirmedPrincipalOf's question.
   */
  function principalOf({ authToken, authorization }: Credentials): TokenPrincipal | null {
    const token = authToken ?? authorization
    if (token === undefined || token === null || token === '') return null
    if (typeof token !== 'string') throw unauthenticated('authToken must be a string')
    // A bare token (`authToken`) or an Authorization header's value.
    return accessTokens.verify(token.includes(' ') ? (bearerTokenOf(token) ?? '') : token)
  }

  /** principalOf, once its account is known to exist (at once while that is fresh). */
  function confirmedPrincipalOf(
    credentials: Credentials,
  ): TokenPrincipal | null | Promise<TokenPrincipal | null> {
    const principal = principalOf(credentials)
    return principal && liveAccounts.confirm(principal)
  }

  return {
    principalOf,
    confirmedPrincipalOf,
    confirm: liveAccounts.confirm,

    /**
     * The one context of every path. A refused token is kept, not thrown, so the
     * operation fails with UNAUTHENTICATED in the GraphQL shape (see beforeExecution).
     * A promise only while the caller's account is being looked up.
     */
    create(
      credentials: Credentials,
      fields: ContextFields,
    ): GraphQLContext | Promise<GraphQLContext> {
      // Not `{ ...fields, principal }`: on Node 20, properties after a spread take V8's
      // slow path, on every operation.
      const context: GraphQLContext = Object.assign(
        { principal: null, loaders: createLoaderSet(loaders) },
        fields,
      )
      let principal: ReturnType<typeof confirmedPrincipalOf>
      try {
        principal = confirmedPrincipalOf(credentials)
      } catch (error) {
        context.tokenError = error as Error
        return context
      }
      if (!(principal instanceof Promise)) {
        context.principal = principal
        return context
      }
      return principal.then(
        (confirmed) => Object.assign(context, { principal: confirmed }),
        (error) => Object.assign(context, { tokenError: error as Error }),
      )
    },
  }
}

export type ContextFactory = ReturnType<typeof createContextFactory>

/** Runs before any operation executes, on every path. */
export function beforeExecution(context: GraphQLContext): void {
  if (context.tokenError) throw context.tokenError
}

/** The signed-in caller of a field that needs a token; UNAUTHENTICATED without one. */
export function callerOf(context: Pick<GraphQLContext, 'principal'>): Principal {
  if (!context.principal) throw unauthenticated('This field needs a token: sign in first')
  return context.principal
}
