import type { TypedDocumentNode } from '@graphql-typed-document-node/core'
import { type DocumentNode, type GraphQLFormattedError, print } from 'graphql'
import { createClient as createWebSocketClient, type Client as WebSocketClient } from 'graphql-ws'

/** A bearer token, or how to get the current one (read per request and per connection). */
export type TokenSource = string | (() => string | undefined | Promise<string | undefined>)

export interface GraphqlClientOptions {
  /** The GraphQL endpoint, e.g. `https://api.example.com/graphql`. */
  url: string
  /** The WebSocket endpoint for subscriptions; the `url` with `ws(s)://` by default. */
  webSocketUrl?: string
  /** Sent as `Authorization: Bearer` over HTTP and as `authToken` in `connection_init`. */
  token?: TokenSource
  /** Another fetch than `globalThis.fetch`. */
  fetch?: typeof fetch
  /** A WebSocket class where there is no global one (Node 20: the `ws` package). */
  webSocketImpl?: unknown
}

/** The variables argument: optional when the operation needs none. */
export type VariablesOf<Variables> = object extends Variables
  ? [variables?: Variables]
  : [variables: Variables]

/** An answer with errors (`data` holds what was resolved anyway), or an HTTP failure. */
export class GraphqlResponseError extends Error {
  constructor(
    readonly errors: readonly GraphQLFormattedError[],
    readonly data: unknown,
    readonly status?: number,
  ) {
    super(errors.map((error) => error.message).join('; ') || `HTTP ${status}`)
    this.name = 'GraphqlResponseError'
  }
}

/** A subscription's events, as they arrive; `return()` ends it. */
export interface Subscription<Result> extends AsyncIterableIterator<Result> {
  return(): Promise<IteratorReturnResult<undefined>>
}

interface ExecutionResult {
  data?: unknown
  errors?: readonly GraphQLFormattedError[]
}

export function createGraphqlClient(options: GraphqlClientOptions) {
  const texts = new WeakMap<DocumentNode, string>()
  const textOf = (document: DocumentNode) => {
    const text = texts.get(document) ?? print(document)
    texts.set(document, text)
    return text
  }
  const currentToken = async () =>
    typeof options.token === 'function' ? await options.token() : options.token
  let socket: WebSocketClient | undefined
  const webSocket = () => {
    socket ??= createWebSocketClient({
      url: options.webSocketUrl ?? options.url.replace(/^http/, 'ws'),
      webSocketImpl: options.webSocketImpl,
      connectionParams: async () => {
        const authToken = await currentToken()
        return authToken ? { authToken } : {}
      },
    })
    return socket
  }

  /** A query or mutation over HTTP POST; its data, or a GraphqlResponseError. */
  async function request<Result, Variables>(
    document: TypedDocumentNode<Result, Variables>,
    ...[variables]: VariablesOf<Variables>
  ): Promise<Result> {
    const token = await currentToken()
    const response = await (options.fetch ?? fetch)(options.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/graphql-response+json, application/json',
        ...(token && { authorization: `Bearer ${token}` }),
      },
      body: JSON.stringify({ query: textOf(document), variables }),
    })
    const result = (await response.json()) as ExecutionResult
    return dataOf<Result>(result, response.status)
  }

  /**
   * A subscription over graphql-ws: each event's data. `break` (or `return()`) ends it
   * without waiting for another event; an event with errors ends it and throws.
   */
  function subscribe<Result, Variables>(
    document: TypedDocumentNode<Result, Variables>,
    ...[variables]: VariablesOf<Variables>
  ): Subscription<Result> {
    const events = webSocket().iterate({
      query: textOf(document),
      variables: variables as Record<string, unknown> | undefined,
    })
    const end = async () => {
      await events.return?.()
      return { done: true, value: undefined } as const
    }
    return {
      async next() {
        const event = await events.next()
        if (event.done) return { done: true, value: undefined }
        try {
          return { done: false, value: dataOf<Result>(event.value) }
        } catch (error) {
          await end()
          throw error
        }
      },
      return: end,
      [Symbol.asyncIterator]() {
        return this
      },
    }
  }

  /** Closes the WebSocket, if one was opened. */
  async function dispose() {
    await socket?.dispose()
    socket = undefined
  }

  return { request, subscribe, dispose }
}

export type GraphqlClient = ReturnType<typeof createGraphqlClient>

function dataOf<Result>(result: ExecutionResult, status?: number): Result {
  if (result.errors?.length || result.data == null) {
    throw new GraphqlResponseError(result.errors ?? [], result.data, status)
  }
  return result.data as Result
}
