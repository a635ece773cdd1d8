import { type GraphQLArgument, isObjectType } from 'graphql'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { documentedRange } from './helpers/fuzz/documented-rules.js'
import { declaredRange, graphqlSchema } from './helpers/fuzz/graphql-schema.js'
import { graphql, wsClient } from './helpers/graphql.js'
import { newUser, startServer, type TestServer } from './helpers/server.js'

/** Every argument schema.graphql gives a `@range`, by `Type.field.argument`. */
const ranged = Object.values(graphqlSchema.getTypeMap())
  .filter(isObjectType)
  .flatMap((type) =>
    Object.values(type.getFields()).flatMap((field) =>
      field.args.flatMap((argument) => {
        const range = declaredRange(argument)
        return range
          ? [{ name: `${type.name}.${field.name}.${argument.name}`, argument, range }]
          : []
      }),
    ),
  )

/**
 * A document that gives each ranged argument `value` (a literal, or `$value`), with
 * `$value`'s type, selecting enough that a large size costs more than the cost limit.
 */
const DOCUMENTS: Record<string, { type: string; document: (value: string) => string }> = {
  'Query.messages.limit': {
    type: 'Int',
    document: (value) => `messages(limit: ${value}) { id chatId text author createdAt }`,
  },
  'Query.notifications.limit': {
    type: 'Int',
    document: (value) => `notifications(limit: ${value}) { id kind title body read createdAt }`,
  },
  'Query.users.ids': {
    type: '[ID!]!',
    document: (value) => `users(ids: ${value}) { id name posts(limit: 100) { id title body } }`,
  },
  'User.posts.limit': {
    type: 'Int',
    document: (value) => `users(ids: ["1"]) { posts(limit: ${value}) { id title body createdAt } }`,
  },
}

const isList = (argument: GraphQLArgument) => argument.type.toString().startsWith('[')

/**
 * Sizes out of a range: one below, one above, and one whose cost alone would be refused
 * (a list's, short of the document's token limit).
 */
const outside = (argument: GraphQLArgument, { min, max }: { min: number; max: number }) => [
  min - 1,
  max + 1,
  max * (isList(argument) ? 5 : 100),
]
const valueOfSize = (argument: GraphQLArgument, size: number) =>
  isList(argument) ? Array.from({ length: size }, (_, index) => String(index + 1)) : size

const argumentNamed = (name: string) => ranged.find((each) => each.name === name)?.argument

describe('the ranges schema.graphql declares', () => {
  it('are each driven below, and stated alike in their descriptions', () => {
    expect(ranged.map((each) => each.name).sort()).toEqual(Object.keys(DOCUMENTS).sort())
    for (const { name, argument, range } of ranged) {
      expect(documentedRange(argument.description), name).toEqual(range)
      if (argument.defaultValue !== undefined) {
        expect(argument.defaultValue, `${name}'s default`).toBeGreaterThanOrEqual(range.min)
        expect(argument.defaultValue, `${name}'s default`).toBeLessThanOrEqual(range.max)
      }
    }
  })
})

describe.each(backends)('arguments out of their ranges on $name', (backend) => {
  let server: TestServer
  let token: string

  beforeAll(async () => {
    server = await startServer(backend)
    token = (await newUser(server.api)).accessToken
  })
  afterAll(() => server?.close())

  const cases = ranged.flatMap(({ name, argument, range }) => {
    const driven = DOCUMENTS[name]
    return driven
      ? outside(argument, range).map((size) => ({ name, argument, size, ...driven }))
      : []
  })

  const expectRefused = (
    errors: { message: string; extensions?: Record<string, any> }[] | undefined,
    argument: GraphQLArgument,
  ) => {
    expect(errors).toHaveLength(1)
    expect(errors?.[0]?.extensions).toEqual({
      code: 'BAD_USER_INPUT',
      details: { [argument.name]: [expect.any(String)] },
    })
    expect(errors?.[0]?.message).toMatch(new RegExp(`^${argument.name} must`))
  }

  it.each(cases)(
    'refuses $name of $size written in the document, before its cost and its token',
    async ({ argument, size, document }) => {
      const literal = JSON.stringify(valueOfSize(argument, size))
      // Without a token: notifications needs one, and the range comes first.
      const response = await graphql(server.baseUrl, `{ ${document(literal)} }`)
      expect(response.status).toBe(400)
      expect(response.body.data).toBeUndefined()
      expectRefused(response.body.errors, argument)
    },
  )

  it.each(cases)(
    'refuses $name of $size given in a variable, before its cost',
    async ({ argument, size, type, document }) => {
      const query = `query Ranged($value: ${type}) { ${document('$value')} }`
      const variables = { value: valueOfSize(argument, size) }
      const response = await graphql(server.baseUrl, query, variables, token)
      expect(response.status).toBe(400)
      expectRefused(response.body.errors, argument)
    },
  )

  it.each(['literal', 'variable'])(
    'refuses an argument out of its range over a WebSocket, given as a %s',
    async (passing) => {
      const client = wsClient(server.baseUrl, { authToken: token })
      const payload =
        passing === 'literal'
          ? { query: '{ messages(limit: 100000) { id } }' }
          : {
              query: 'query($n: Int) { messages(limit: $n) { id } }',
              variables: { n: 100_000 },
            }
      const errors = await new Promise<unknown>((resolve) => {
        client.subscribe(payload, { next: () => {}, error: resolve, complete: () => resolve([]) })
      })
      await client.dispose()
      expectRefused(
        errors as { message: string }[],
        argumentNamed('Query.messages.limit') as GraphQLArgument,
      )
    },
  )
})
