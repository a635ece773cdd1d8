import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { graphqlExchange } from './helpers/fuzz/graphql-oracle.js'
import {
  flawedGraphqlRequests,
  type GraphqlGeneration,
  validGraphqlRequests,
} from './helpers/fuzz/graphql-requests.js'
import { rootFields } from './helpers/fuzz/graphql-schema.js'
import { subscriptionExchange } from './helpers/fuzz/graphql-subscriptions.js'
import { storedDataProblems } from './helpers/fuzz/invariants.js'
import { FUZZ, fuzz, PROPERTY_TIMEOUT_MS } from './helpers/fuzz/settings.js'
import { createWorld, type World } from './helpers/fuzz/world.js'

/** A message's or notification's id, as `before` takes it: decimal digits of a positive int32. */
const messageIds = fc.integer({ min: 1, max: 2 ** 31 - 1 }).map(String)
const notMessageIds = fc.constantFrom(
  'abc',
  '0x10',
  '0',
  '-1',
  '1.5',
  ' 1',
  '1e3',
  '2147483648',
  '',
)

/**
 * Ids of the world's rows (its orders, and the notifications their changes made), any
 * other, and text no row's id is: an order or notification is found, or NOT_FOUND.
 */
const rowIds = (world: World) =>
  fc.oneof(
    fc.constantFrom(...world.orderIds),
    fc.integer({ min: 1, max: 5 }).map(String),
    messageIds,
    notMessageIds,
  )

/**
 * Ids of the world's accounts, as text or as integers (an ID may be either), and ids no
 * account has: a user is found, or NOT_FOUND (null in `users`).
 */
const userIds = (world: World) => {
  const { user, admin } = world.accounts
  return fc.oneof(
    fc.constantFrom<unknown>(user.id, admin.id, String(user.id), String(admin.id)),
    fc.integer({ min: 1, max: 5 }).map(String),
    messageIds,
    notMessageIds,
  )
}

const generationOf = (world: World): GraphqlGeneration => ({
  tokens: world.tokens,
  hints: {
    values: {
      'user.id': userIds(world),
      // Some named twice: each is answered where it is named.
      'users.ids': fc.array(userIds(world), { minLength: 1, maxLength: 6 }),
      // `users` costs as 100 users, whatever `ids` holds: their posts are within the cost
      // up to 11 each (README.md's cost), and refused beyond.
      'users.User.posts.limit': fc.oneof(
        fc.integer({ min: 1, max: 11 }),
        fc.integer({ min: 1, max: 100 }),
      ),
      'messages.before': messageIds,
      'notifications.before': fc.oneof(fc.integer({ min: 1, max: 5 }).map(String), messageIds),
      'order.id': rowIds(world),
      'orderUpdated.orderId': rowIds(world),
      'markNotificationRead.id': rowIds(world),
      // The world's chat and its messages, so that `after` is sometimes one of its own.
      'messageAdded.chatId': fc.oneof(
        fc.constant(world.chat.chatId),
        fc.constant('general'),
        fc.string({ maxLength: 20 }),
      ),
      'messageAdded.after': fc.oneof(
        fc.constantFrom(...world.chat.messageIds.map(String)),
        messageIds,
        notMessageIds,
      ),
      'notificationAdded.after': rowIds(world),
    },
    invalid: {
      'messages.before': notMessageIds,
      'notifications.before': notMessageIds,
      'messageAdded.after': notMessageIds,
      'notificationAdded.after': notMessageIds,
    },
  },
})

/**
 * Every root field of schema.graphql driven with arguments generated from its types and
 * documented ranges, and with documents that are malformed: valid ones answered as the
 * field's rules say, flawed ones refused with a client's error code and nothing stored,
 * never a 5xx nor INTERNAL_SERVER_ERROR. Subscriptions also over WebSocket.
 */
describe.each(backends)(
  `GraphQL fuzzing on $name (${FUZZ.runs} runs, seed ${FUZZ.seed})`,
  (backend) => {
    let world: World
    beforeAll(async () => {
      world = await createWorld(backend)
    })
    afterAll(() => world?.server.close())

    describe.each(rootFields)('$kind $field.name', (field) => {
      const name = `${field.kind} ${field.field.name}`
      it(
        'answers valid arguments over HTTP as the schema and its rules say',
        () =>
          fuzz(`${name} valid`, validGraphqlRequests(field, generationOf(world)), (request) =>
            graphqlExchange(world, field, request),
          ),
        PROPERTY_TIMEOUT_MS,
      )

      it(
        'refuses flawed arguments and documents over HTTP, storing nothing',
        () =>
          fuzz(`${name} flawed`, flawedGraphqlRequests(field, generationOf(world)), (request) =>
            graphqlExchange(world, field, request),
          ),
        PROPERTY_TIMEOUT_MS,
      )

      if (field.kind !== 'subscription') return
      it(
        'starts valid subscriptions over WebSocket and refuses flawed ones',
        () => {
          const overWebSocket = fc.oneof(
            validGraphqlRequests(field, generationOf(world)),
            flawedGraphqlRequests(field, generationOf(world)).filter(
              (request) => !('raw' in request.body),
            ),
          )
          return fuzz(`${name} over WebSocket`, overWebSocket, (request) =>
            subscriptionExchange(world, request),
          )
        },
        PROPERTY_TIMEOUT_MS,
      )
    })

    it('leaves only valid data stored', async () => {
      expect(await storedDataProblems(world.db)).toEqual([])
    })
  },
)
