import { type Client, type ClientOptions, createClient } from 'graphql-ws'
import WebSocket from 'ws'

export interface GraphQLResponse<Data = any> {
  status: number
  body: { data?: Data | null; errors?: { message: string; extensions?: Record<string, any> }[] }
}

/** A GraphQL request over HTTP POST, as any client sends it. */
export async function graphql<Data = any>(
  baseUrl: string,
  query: string,
  variables?: Record<string, unknown>,
  token?: string,
): Promise<GraphQLResponse<Data>> {
  const response = await fetch(`${baseUrl}/graphql`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json, application/json',
      ...(token && { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify({ query, variables }),
  })
  return { status: response.status, body: (await response.json()) as GraphQLResponse<Data>['body'] }
}

export const wsUrl = (baseUrl: string) => `${baseUrl.replace(/^http/, 'ws')}/graphql`

/** A graphql-ws client (graphql-transport-ws), without retries so failures show. */
export function wsClient(
  baseUrl: string,
  connectionParams?: Record<string, unknown>,
  options: Partial<ClientOptions> = {},
): Client {
  return createClient({
    url: wsUrl(baseUrl),
    webSocketImpl: WebSocket,
    connectionParams,
    retryAttempts: 0,
    lazy: false,
    ...options,
  })
}

/** Collects what a subscription delivers until `count` items arrived. */
export function collect<T = any>(
  client: Client,
  query: string,
  variables: Record<string, unknown> = {},
) {
  const items: T[] = []
  const errors: unknown[] = []
  let notify: (() => void) | undefined
  const dispose = client.subscribe<T>(
    { query, variables },
    {
      next: (value) => {
        items.push(value.data as T)
        notify?.()
      },
      error: (error) => {
        errors.push(error)
        notify?.()
      },
      complete: () => {},
    },
  )
  return {
    items,
    errors,
    dispose,
    /** Resolves once `count` items arrived; rejects after `timeoutMs`. */
    until(count: number, timeoutMs = 10_000): Promise<T[]> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `got ${items.length} of ${count} events; errors: ${JSON.stringify(errors)}`,
              ),
            ),
          timeoutMs,
        )
        const check = () => {
          if (items.length >= count) {
            clearTimeout(timer)
            notify = undefined
            resolve(items)
          }
        }
        notify = check
        check()
      })
    },
  }
}

/** Waits until the server holds `count` live subscriptions, so none misses an event. */
export async function subscriptionsActive(
  events: { activeSubscriptions(): number },
  count: number,
  timeoutMs = 10_000,
) {
  const deadline = Date.now() + timeoutMs
  while (events.activeSubscriptions() < count) {
    if (Date.now() > deadline) {
      throw new Error(`${events.activeSubscriptions()} of ${count} subscriptions active`)
    }
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

const SEND_MESSAGE = `mutation ($text: String!, $author: String!, $chatId: ID!) {
  sendMessage(text: $text, author: $author, chatId: $chatId) { id }
}`

/**
 * One chat with a live subscriber, for tests that break what lies between a sendMessage
 * and its delivery: `send` answers the mutation's id, `texts` what was delivered so far.
 */
export async function watchedChat(
  server: { baseUrl: string; events: { activeSubscriptions(): number } },
  chatId: string,
) {
  const client = wsClient(server.baseUrl)
  const subscription = collect(
    client,
    `subscription { messageAdded(chatId: "${chatId}") { text } }`,
  )
  await subscriptionsActive(server.events, 1)
  return {
    async send(text: string): Promise<string> {
      const answer = await graphql(server.baseUrl, SEND_MESSAGE, {
        text,
        chatId,
        author: 'watcher',
      })
      return answer.body.data?.sendMessage.id
    },
    delivered: (count: number, timeoutMs?: number) => subscription.until(count, timeoutMs),
    texts: () => subscription.items.map((item) => item.messageAdded.text as string),
    async close() {
      subscription.dispose()
      await client.dispose()
    },
  }
}
