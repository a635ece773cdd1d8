// A client team's program, written only against what the generators made from the
// specs: openapi-fetch over openapi-typescript's paths, and client-preset documents.

import { createHmac, randomUUID } from 'node:crypto'
import type { TypedDocumentNode } from '@graphql-typed-document-node/core'
import { print } from 'graphql'
import { type Client, createClient as createWsClient } from 'graphql-ws'
import createClient from 'openapi-fetch'
import WebSocket from 'ws'
import { graphql } from './generated/gql/index.js'
import type { paths } from './generated/openapi.js'
import type { paths as pathsV2 } from './generated/openapi.v2.js'

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
const ReadOrder = graphql(`
  query ReadOrder($id: ID!) {
    order(id: $id) { id status total }
  }
`)
const OrderUpdated = graphql(`
  subscription OrderUpdated($orderId: ID!) {
    orderUpdated(orderId: $orderId) { id status }
  }
`)

async function execute<Result, Variables>(
  baseUrl: string,
  document: TypedDocumentNode<Result, Variables>,
  variables: Variables,
  token?: string,
): Promise<Result> {
  const response = await fetch(`${baseUrl}/graphql`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token && { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify({ query: print(document), variables }),
  })
  const body = (await response.json()) as { data?: Result; errors?: unknown[] }
  if (!body.data || body.errors) throw new Error(`GraphQL failed: ${JSON.stringify(body)}`)
  return body.data
}

/** Every result of a typed subscription, as it arrives, typed by its document. */
function follow<Result, Variables extends Record<string, unknown>>(
  client: Client,
  document: TypedDocumentNode<Result, Variables>,
  variables: Variables,
) {
  const results: Result[] = []
  const errors: unknown[] = []
  let changed = () => {}
  const dispose = client.subscribe<Result>(
    { query: print(document), variables },
    {
      next: (value) => {
        if (value.data) results.push(value.data)
        if (value.errors) errors.push(...value.errors)
        changed()
      },
      error: (error) => {
        errors.push(error)
        changed()
      },
      complete: () => {},
    },
  )
  /** Resolves with every result so far once `done` holds of them; rejects on an error. */
  const until = (done: (results: Result[]) => boolean, timeoutMs = 10_000) =>
    new Promise<Result[]>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`timed out with ${results.length}`)),
        timeoutMs,
      )
      changed = () => {
        if (errors.length > 0) reject(new Error(`subscription failed: ${JSON.stringify(errors)}`))
        else if (done(results)) resolve(results)
        else return
        clearTimeout(timer)
      }
      changed()
    })
  return { dispose, until }
}

/** A payment provider's headers for `body`: its HMAC is over the exact bytes sent. */
function webhookSignature(secret: string, body: string) {
  const timestamp = String(Math.floor(Date.now() / 1000))
  const signature = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')
  return { timestamp, signature: `sha256=${signature}` }
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

/**
 * Version 2, through a client generated from its own description: the same operations,
 * with `meta` (request id, timestamp and a list's pagination) beside `data`.
 */
export async function restScenarioV2(baseUrl: string, admin: Credentials) {
  const api = createClient<pathsV2>({ baseUrl: `${baseUrl}/api/v2` })
  const login = await api.POST('/auth/login', { body: admin })
  if (!login.data) throw new Error(`login failed: ${JSON.stringify(login.error)}`)
  const headers = { authorization: `Bearer ${login.data.data.accessToken}` }
  const created = await api.POST('/products', {
    body: { name: 'SDK v2 lamp', price: 8, category: 'sdk-v2', stock: 2 },
    headers,
  })
  if (!created.data) throw new Error(`create failed: ${JSON.stringify(created.error)}`)
  const { id } = created.data.data
  const listed = await api.GET('/products', { params: { query: { category: 'sdk-v2' } } })
  const read = await api.GET('/products/{id}', { params: { path: { id } } })
  const cached = await api.GET('/products/{id}', {
    params: { path: { id }, header: { 'If-None-Match': read.response.headers.get('etag') ?? '' } },
  })
  const missing = await api.GET('/products/{id}', { params: { path: { id: id + 1000 } } })
  return {
    location: created.response.headers.get('location') === `/api/v2/products/${id}`,
    requestIdEchoed: created.data.meta.requestId === created.response.headers.get('x-request-id'),
    listedTotal: listed.data?.meta.pagination.total,
    readName: read.data?.data.name,
    answeredBy: read.response.headers.get('api-version'),
    notModified: cached.response.status,
    missingCode: missing.error?.error.code,
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

/**
 * An order's life as a client team drives it: placed (idempotently) by a new user,
 * followed live, paid by a signed webhook, read back as PAID, cancelled, its stock back.
 */
export async function orderScenario(
  baseUrl: string,
  admin: Credentials,
  webhookSecret: string,
  waitForSubscription: () => Promise<void>,
) {
  const api = createClient<paths>({ baseUrl })
  const user = { email: `sdk-order-${Date.now()}@example.com`, password: 'sdk-password-1' }
  const signUp = await api.POST('/users', { body: { name: 'SDK buyer', ...user } })
  if (!signUp.data) throw new Error(`sign-up failed: ${JSON.stringify(signUp.error)}`)
  const [adminLogin, userLogin] = await Promise.all([
    api.POST('/auth/login', { body: admin }),
    api.POST('/auth/login', { body: user }),
  ])
  if (!adminLogin.data || !userLogin.data) throw new Error('login failed')
  const adminHeaders = { authorization: `Bearer ${adminLogin.data.data.accessToken}` }
  const userToken = userLogin.data.data.accessToken
  const userHeaders = { authorization: `Bearer ${userToken}` }

  const product = await api.POST('/products', {
    body: { name: 'SDK kettle', price: 20, category: 'sdk-orders', stock: 5 },
    headers: adminHeaders,
  })
  if (!product.data) throw new Error(`create failed: ${JSON.stringify(product.error)}`)
  const productId = product.data.data.id
  const stockOf = async () =>
    (await api.GET('/products/{id}', { params: { path: { id: productId } } })).data?.data.stock

  // A retry with the key, as after a timeout, answers the order placed first.
  const idempotencyKey = randomUUID()
  const place = () =>
    api.POST('/orders', {
      params: { header: { 'Idempotency-Key': idempotencyKey } },
      body: { items: [{ productId, quantity: 2 }] },
      headers: userHeaders,
    })
  const placed = await place()
  if (!placed.data) throw new Error(`order failed: ${JSON.stringify(placed.error)}`)
  const retried = await place()
  const orderId = placed.data.data.id
  const stockOrdered = await stockOf()

  const client = createWsClient({
    url: `${baseUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authToken: userToken },
    retryAttempts: 0,
  })
  try {
    const live = follow(client, OrderUpdated, { orderId: String(orderId) })
    await waitForSubscription()
    // The order as it is comes first; the changes after it.
    await live.until((updates) => updates.length > 0)

    const event = { id: `evt_${randomUUID()}`, type: 'payment.succeeded', data: { orderId } }
    const raw = JSON.stringify(event)
    const { timestamp, signature } = webhookSignature(webhookSecret, raw)
    const receipt = await api.POST('/webhooks/payments', {
      params: { header: { 'X-Webhook-Timestamp': timestamp, 'X-Webhook-Id': event.id } },
      body: event,
      // The signature covers the bytes on the wire: send the very string that was signed.
      bodySerializer: () => raw,
      // Not a parameter of the operation but its security scheme, so not in its types.
      headers: { 'X-Webhook-Signature': signature },
    })
    if (!receipt.data) throw new Error(`webhook failed: ${JSON.stringify(receipt.error)}`)
    const paid = await execute(baseUrl, ReadOrder, { id: String(orderId) }, userToken)

    const cancelled = await api.POST('/orders/{id}/cancel', {
      params: { path: { id: orderId } },
      headers: userHeaders,
    })
    const seen = await live.until((updates) =>
      updates.some((update) => update.orderUpdated.status === 'CANCELLED'),
    )
    live.dispose()
    const final = await api.GET('/orders/{id}', {
      params: { path: { id: orderId } },
      headers: userHeaders,
    })
    return {
      replayed: retried.response.headers.get('idempotent-replayed'),
      sameOrder: retried.data?.data.id === orderId,
      receipt: receipt.data.data,
      readBack: paid.order?.status,
      cancelled: cancelled.data?.data.status,
      statusesSeenLive: seen.map((update) => update.orderUpdated.status),
      finalStatus: final.data?.data.status,
      stock: { before: product.data.data.stock, ordered: stockOrdered, after: await stockOf() },
    }
  } finally {
    await client.dispose()
  }
}
