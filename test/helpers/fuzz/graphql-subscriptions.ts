import { expect } from 'vitest'
import WebSocket from 'ws'
import { wsUrl } from '../graphql.js'
import { CLIENT_CODES } from './graphql-oracle.js'
import { expectedRefusal } from './graphql-refusals.js'
import type { GraphqlRequest } from './graphql-requests.js'
import { rootFields } from './graphql-schema.js'
import type { World } from './world.js'

/** How long a subscription may take to start, or to be refused. */
const SETTLE_MS = 5_000

/** Close codes of graphql-transport-ws that refuse a client's message, not a server fault. */
const CLIENT_CLOSE_CODES = [4400, 4403]

type Outcome = { started: true } | { refused: unknown }

/**
 * Subscribes over WebSocket in graphql-transport-ws, written by hand so that payloads a
 * client library would refuse to send (a query that is not a string) reach the server,
 * on a connection of its own; tells whether the subscription started (the server counts
 * it) or was refused, by an error message or by closing.
 */
async function subscribe(world: World, request: GraphqlRequest): Promise<Outcome> {
  const { events } = world.server
  const active = events.activeSubscriptions()
  const socket = new WebSocket(wsUrl(world.server.baseUrl), 'graphql-transport-ws')
  const send = (message: object) => socket.send(JSON.stringify(message))
  try {
    return await new Promise<Outcome>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('neither started nor refused')), SETTLE_MS)
      const poll = setInterval(() => {
        if (events.activeSubscriptions() > active) settle({ started: true })
      }, 5)
      const settle = (outcome: Outcome) => {
        clearTimeout(timer)
        clearInterval(poll)
        resolve(outcome)
      }
      // connection_init's authToken takes a bare token or an Authorization header's value.
      const { authorization } = request
      socket.on('open', () =>
        send({
          type: 'connection_init',
          payload: authorization ? { authToken: authorization } : {},
        }),
      )
      socket.on('message', (data) => {
        const message = JSON.parse(String(data))
        if (message.type === 'connection_ack') {
          send({ id: '1', type: 'subscribe', payload: request.body })
        } else if (message.type === 'error') {
          settle({ refused: message.payload })
        } else if (message.type === 'next' && message.payload.errors) {
          // Refused while it starts: a result with errors, then complete.
          settle({ refused: message.payload.errors })
        } else if (message.type === 'complete') {
          settle({ refused: 'completed at once' })
        }
      })
      socket.on('close', (code, reason) => settle({ refused: { code, reason: String(reason) } }))
      socket.on('error', reject)
    })
  } finally {
    socket.close()
    // The next case counts from here: this one's subscription must be gone first.
    await until(() => events.activeSubscriptions() <= active)
  }
}

async function until(condition: () => boolean) {
  const deadline = Date.now() + SETTLE_MS
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('a disposed subscription is still counted')
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/** A refusal in the protocol's terms: GraphQL errors with client codes, or a 44xx close. */
function expectClientRefusal(refusal: unknown) {
  if (Array.isArray(refusal)) {
    expect(refusal.length).toBeGreaterThan(0)
    for (const error of refusal) expect(CLIENT_CODES).toContain(error.extensions?.code)
    return
  }
  const code = (refusal as { code?: unknown }).code
  expect(CLIENT_CLOSE_CODES, `refused with ${String(refusal)}`).toContain(code)
}

/**
 * Valid arguments start the subscription, unless the field refuses the caller: without
 * a token, or an order the caller may not follow (refused as it starts, with the code).
 */
async function expectValidOutcome(world: World, request: GraphqlRequest, outcome: Outcome) {
  const field = rootFields.find((each) => each.field.name === request.field)
  if (!field) throw new Error(`schema.graphql has no root field ${request.field}`)
  const refusal = await expectedRefusal(world, field, request)
  if (!refusal) {
    expect(outcome, 'a valid subscription must start').toEqual({ started: true })
    return
  }
  const errors = 'refused' in outcome && Array.isArray(outcome.refused) ? outcome.refused : []
  expect(
    errors.map((error) => error.extensions?.code),
    `refused with ${refusal}: ${JSON.stringify(outcome)}`,
  ).toEqual([refusal])
}

/**
 * A subscription of valid arguments starts, whatever the chat, unless its field refuses
 * the caller; a flawed one is refused as the client's fault, never closed as the
 * server's (4500).
 */
export async function subscriptionExchange(world: World, request: GraphqlRequest) {
  const outcome = await subscribe(world, request)
  if (request.caller === 'forged') {
    // The connection's token is refused before any subscription: closed with 4403.
    expect(outcome).toMatchObject({ refused: { code: 4403 } })
    return
  }
  if (!request.flaw) return expectValidOutcome(world, request, outcome)
  expect('refused' in outcome, 'a flawed subscription started').toBe(true)
  if ('refused' in outcome) expectClientRefusal(outcome.refused)
}
