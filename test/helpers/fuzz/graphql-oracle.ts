import { expect } from 'vitest'
import type {
  MutationResolvers,
  QueryResolvers,
  SubscriptionResolvers,
} from '../../../generated/graphql.js'
import type { NotificationRow } from '../../../src/db/schema.js'
import { assertMatchesSpec } from '../contract.js'
import { type StoredOrder, storedRows, storedState } from './database-state.js'
import { ignoredWhenSignedIn } from './documented-rules.js'
import { costOf, MAX_COST } from './graphql-cost.js'
import { callerRefusal, lookupRefusal, orderNamed, ownNotification } from './graphql-refusals.js'
import type { GraphqlRequest } from './graphql-requests.js'
import type { RootField } from './graphql-schema.js'
import { userExpectations } from './graphql-user-expectations.js'
import { argumentsBreakingRules } from './graphql-values.js'
import { notificationOf, orderOf } from './orders-model.js'
import { accountOf, type World } from './world.js'

export interface GraphqlError {
  message: string
  extensions?: { code?: string; details?: Record<string, string[]> }
}

interface GraphqlAnswer {
  status: number
  data: Record<string, any> | null | undefined
  errors: GraphqlError[]
  /** Refused before GraphQL ran (a body too large, another media type), in REST's envelope. */
  refusedAsRest?: boolean
}

/** The codes README.md documents for `extensions.code`; INTERNAL_SERVER_ERROR is a bug here. */
export const CLIENT_CODES = [
  'BAD_USER_INPUT',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'NOT_FOUND',
  'CONFLICT',
  'RATE_LIMITED',
  'GRAPHQL_VALIDATION_FAILED',
]

async function send(world: World, request: GraphqlRequest): Promise<GraphqlAnswer> {
  const { authorization } = request
  const url = `${world.server.baseUrl}/graphql`
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': request.contentType,
      accept: 'application/graphql-response+json, application/json',
      ...(authorization && { authorization }),
    },
    body: 'raw' in request.body ? request.body.raw : JSON.stringify(request.body),
  })
  const text = await response.text()
  const contentType = response.headers.get('content-type')
  const body = JSON.parse(text)
  if ('error' in body) {
    assertMatchesSpec('POST', url, { status: response.status, contentType, body, text })
    return { status: response.status, data: undefined, errors: [], refusedAsRest: true }
  }
  return { status: response.status, data: body.data, errors: body.errors ?? [] }
}

/**
 * Sends the request and holds the answer to every rule: never a 5xx nor an
 * INTERNAL_SERVER_ERROR, every error with a documented code, a flawed request refused
 * without storing anything, and a valid one answered as its field's rules say.
 */
export async function graphqlExchange(world: World, field: RootField, request: GraphqlRequest) {
  const before = await storedState(world.db)
  const answer = await send(world, request)
  expect(answer.status, 'a server error').toBeLessThan(500)
  for (const error of answer.errors) {
    expect(CLIENT_CODES, `an error without a client's code: ${error.message}`).toContain(
      error.extensions?.code,
    )
  }
  const refused = request.flaw
    ? judgeFlawed(request, answer)
    : judgeValid(world, field, request, answer)
  if (await refused) {
    expect(await storedState(world.db), 'a refused request changed what is stored').toBe(before)
  }
}

function judgeFlawed(request: GraphqlRequest, answer: GraphqlAnswer): boolean {
  if (request.refused === false) return false
  const refused = answer.refusedAsRest || answer.errors.length > 0
  expect(refused, 'a flawed request answered without an error').toBe(true)
  const { outOfRange } = request
  // Written into the document, refused with it, before the cost and the token are read;
  // in a variable, once the variables are known, after a forged token.
  if (outOfRange && (outOfRange.literal || request.caller !== 'forged')) {
    const codes = answer.errors.map((error) => error.extensions?.code)
    expect(codes, `${outOfRange.argument} out of its declared range`).toEqual(['BAD_USER_INPUT'])
    expect(Object.keys(answer.errors[0]?.extensions?.details ?? {})).toEqual([outOfRange.argument])
  }
  return true
}

/** True when the request had to be refused. */
async function judgeValid(
  world: World,
  field: RootField,
  request: GraphqlRequest,
  answer: GraphqlAnswer,
): Promise<boolean> {
  const codes = answer.errors.map((error) => error.extensions?.code)
  const overCost = (variablesKnown: boolean) => {
    const cost = costOf(field, request, variablesKnown)
    if (cost <= MAX_COST) return false
    expect(codes, `an operation that costs ${cost}`).toEqual(['GRAPHQL_VALIDATION_FAILED'])
    return true
  }
  // The limits come before all, the cost counted first with its variables unknown.
  if (overCost(false)) return true
  if (request.caller === 'forged') {
    expect(codes, 'a forged token must be refused').toEqual(['UNAUTHENTICATED'])
    return true
  }
  if (field.kind === 'subscription') {
    // Over HTTP a subscription is refused, pointing to the WebSocket.
    expect(codes).toEqual(['BAD_USER_INPUT'])
    return true
  }
  if (overCost(true)) return true
  const callerRefused = callerRefusal(field, request.caller)
  if (callerRefused) {
    // Before its arguments are read: the field says nothing to a caller it does not serve.
    expect(codes, 'a field answered a caller it does not serve').toEqual([callerRefused])
    return true
  }
  const signedIn = request.caller === 'user' || request.caller === 'admin'
  const read = field.field.args.filter(
    (argument) => !(signedIn && ignoredWhenSignedIn(argument.description)),
  )
  const breaking = argumentsBreakingRules(read, request.args)
  if (breaking.length > 0) {
    expect(codes, `a documented rule broken in ${breaking}`).toEqual(['BAD_USER_INPUT'])
    const named = Object.keys(answer.errors[0]?.extensions?.details ?? {})
    expect(named.length).toBeGreaterThan(0)
    for (const name of named) expect(breaking).toContain(name)
    return true
  }
  const refusal = await lookupRefusal(world, field, request)
  if (refusal) {
    expect(codes, 'a row the caller may not see, or none').toEqual([refusal])
    return true
  }
  expect(answer.errors, 'valid arguments refused, and no documented rule says why').toEqual([])
  // The field's answer, under its alias when it has one.
  const [value] = Object.values(answer.data ?? {})
  await graphqlExpectations[field.field.name as RootFieldName](world, request, value)
  return false
}

export type RootFieldName =
  | keyof QueryResolvers
  | keyof MutationResolvers
  | keyof SubscriptionResolvers
export type Expectation = (world: World, request: GraphqlRequest, data: any) => void | Promise<void>

/** An order as GraphQL shows it: REST's, its ids as text. */
function graphqlOrder(stored: StoredOrder) {
  const order = orderOf(stored)
  return {
    ...order,
    id: String(order.id),
    userId: String(order.userId),
    items: order.items.map((item) => ({ ...item, productId: String(item.productId) })),
  }
}

const graphqlNotification = (row: NotificationRow) => ({
  ...notificationOf(row),
  id: String(row.id),
})

/** The caller's notifications, newest first, as `notifications` takes its arguments. */
async function newestNotifications(world: World, request: GraphqlRequest) {
  const { limit, before, unreadOnly } = request.args as Record<string, any>
  const ownerId = accountOf(world, request.caller).id
  const rows = [...(await storedRows(world.db)).notifications.values()]
  return rows
    .filter((row) => row.userId === ownerId && !(unreadOnly && row.read))
    .filter((row) => before == null || row.id < Number(before))
    .sort((a, b) => b.id - a.id)
    .slice(0, limit ?? 20)
}

/**
 * What each root field answers valid arguments. Total over schema.graphql's root fields:
 * a field added there fails `tsc` here until its answers are stated.
 */
const graphqlExpectations = {
  ...userExpectations,

  messages(_world, request, data) {
    const { chatId, limit, before } = request.args as Record<string, unknown>
    const listed = data as { id: string; chatId: string }[]
    expect(listed.length).toBeLessThanOrEqual((limit as number | null) ?? 100)
    const ids = listed.map((message) => Number(message.id))
    expect(ids, 'oldest first').toEqual([...ids].sort((a, b) => a - b))
    for (const message of listed) {
      if (chatId != null) expect(message.chatId).toBe(String(chatId))
      if (before != null) expect(Number(message.id)).toBeLessThan(Number(before))
    }
  },

  sendMessage(world, request, data) {
    const { text, author, chatId } = request.args as Record<string, unknown>
    const { caller } = request
    const signedIn = caller === 'user' || caller === 'admin' ? world.accounts[caller] : undefined
    expect(data).toMatchObject({
      text,
      chatId: String(chatId ?? 'general'),
      author: signedIn ? signedIn.name : author,
    })
  },

  messageAdded() {
    throw new Error('a subscription over HTTP is refused before its answer is judged')
  },

  async order(world, request, data) {
    const stored = await orderNamed(world, (request.args as { id: unknown }).id)
    expect(stored, 'an order answered for an id no order has').toBeDefined()
    if (stored) expect(data).toEqual(graphqlOrder(stored))
  },

  async notifications(world, request, data) {
    const expected = await newestNotifications(world, request)
    expect(data).toEqual(expected.map(graphqlNotification))
  },

  async markNotificationRead(world, request, data) {
    const { caller, args } = request
    const row = await ownNotification(world, caller, (args as { id: unknown }).id)
    expect(row?.read, 'marked read, and stored so').toBe(true)
    if (row) expect(data).toEqual(graphqlNotification(row))
  },

  orderUpdated() {
    throw new Error('a subscription over HTTP is refused before its answer is judged')
  },

  notificationAdded() {
    throw new Error('a subscription over HTTP is refused before its answer is judged')
  },

  userStatusChanged() {
    throw new Error('a subscription over HTTP is refused before its answer is judged')
  },

  metricsUpdated() {
    throw new Error('a subscription over HTTP is refused before its answer is judged')
  },
} satisfies Record<RootFieldName, Expectation>
