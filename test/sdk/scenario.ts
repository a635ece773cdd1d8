// A client team's program, written only against what the generators made from the
// specs: openapi-fetch over openapi-typescript's paths, and client-preset documents.

import type { TypedDocumentNode } from '@graphql-typed-document-node/core'
import { print } from 'graphql'
import { createClient as createWsClient } from 'graphql-ws'
import createClient from 'openapi-fetch'
import WebSocket from 'ws'
import { graphql } from './generated/gql/index.js'
import type { paths } from './generated/openapi.js'

const SendMessage = graphql(`
  mutation SendMessage($text: String!, $author: String!, $chatId: ID!) {
    sendMessage(text: $text, author: $author, chatId: $chatId) { id chatId text }
  }
`)
const ListMessages = graphql(`
  query ListMessages($chatId: ID) {
    messages(chatId: $chatId) { id text author }
  }
`)
const MessageAdded = graphql(`
  subscription MessageAdded($chatId: ID) {
    messageAdded(chatId: $chatId) { id text }
  }
`)

async function execute<Result, Variables>(
  baseUrl: string,
  document: TypedDocumentNode<Result, Variables>,
  variables: Variables,
): Promise<Result> {
  const response = await fetch(`${baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: print(document), variables }),
  })
  const body = (await response.json()) as { data?: Result; errors?: unknown[] }
  if (!body.data || body.errors) throw new Error(`GraphQL failed: ${JSON.stringify(body)}`)
  return body.data
}

export interface Credentials {
  email: string
  password: string
}

/** Every REST operation a client team uses, through the generated types. */
export async function restScenario(baseUrl: string, admin: Credentials) {
  const api = createClient<paths>({ baseUrl })
  const email = `sdk-${Date.now()}@example.com`
  const signUp = await api.POST('/users', {
    body: { name: 'SDK user', email, password: 'sdk-password-1' },
  })
  const login = await api.POST('/auth/login', { body: admin })
  if (!login.data) throw new Error(`login failed: ${JSON.stringify(login.error)}`)
  const refreshed = await api.POST('/auth/refresh', {
    body: { refreshToken: login.data.data.refreshToken },
  })
  if (!refreshed.data) throw new Error('refresh failed')
  const headers = { authorization: `Bearer ${refreshed.data.data.accessToken}` }

  const created = await api.POST('/products', {
    body: { name: 'SDK lamp', price: 12.5, category: 'sdk' },
    headers,
  })
  if (!created.data) throw new Error(`create failed: ${JSON.stringify(created.error)}`)
  const id = created.data.data.id
  const listed = await api.GET('/products', { params: { query: { category: 'sdk', limit: 5 } } })
  const read = await api.GET('/products/{id}', { params: { path: { id } } })
  const updated = await api.PATCH('/products/{id}', {
    params: { path: { id } },
    body: { stock: 7 },
    headers,
  })
  const deleted = await api.DELETE('/products/{id}', { params: { path: { id } }, headers })
  const gone = await api.GET('/products/{id}', { params: { path: { id } } })
  return {
    signedUp: signUp.data?.data.email,
    tokenType: refreshed.data.data.tokenType,
    listedTotal: listed.data?.pagination.total,
    readName: read.data?.data.name,
    updatedStock: updated.data?.data.stock,
    deletedStatus: deleted.response.status,
    goneCode: gone.error?.error.code,
  }
}

/** Send, list and subscribe through the typed documents. */
export async function graphqlScenario(baseUrl: string, waitForSubscription: () => Promise<void>) {
  const chatId = `sdk-${Date.now()}`
  const client = createWsClient({
    url: `${baseUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
  })
  const received = new Promise<string>((resolve, reject) => {
    client.subscribe<{ messageAdded: { text: string } }>(
      { query: print(MessageAdded), variables: { chatId } },
      {
        next: (value) => resolve(value.data?.messageAdded.text ?? ''),
        error: reject,
        complete: () => {},
      },
    )
  })
  await waitForSubscription()
  const sent = await execute(baseUrl, SendMessage, { text: 'typed hello', author: 'sdk', chatId })
  const listed = await execute(baseUrl, ListMessages, { chatId })
  const live = await received
  await client.dispose()
  return {
    sentChat: sent.sendMessage.chatId,
    listed: listed.messages.map((each) => each.text),
    live,
  }
}
