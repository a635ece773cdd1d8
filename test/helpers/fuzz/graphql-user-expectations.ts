import type { GraphQLObjectType } from 'graphql'
import { expect } from 'vitest'
import type { UserRow } from '../../../src/db/schema.js'
import { storedRows } from './database-state.js'
import type { Expectation, RootFieldName } from './graphql-oracle.js'
import { userNamed } from './graphql-refusals.js'
import type { GraphqlRequest } from './graphql-requests.js'
import { graphqlSchema } from './graphql-schema.js'
import { graphqlUserOf, postsOf, viewerOf } from './users-model.js'
import { accountOf, type World } from './world.js'

/** How many posts `User.posts` lists: its `limit`, or the schema's default. */
function postsLimit(request: GraphqlRequest): number | undefined {
  const args = request.nested?.['User.posts']
  if (!args) return undefined
  const user = graphqlSchema.getType('User') as GraphQLObjectType
  const limit = user.getFields().posts?.args.find((argument) => argument.name === 'limit')
  return (args.limit as number | null | undefined) ?? (limit?.defaultValue as number)
}

/** A user as the caller sees them over GraphQL, with the posts the document selects. */
async function graphqlUser(world: World, request: GraphqlRequest, row: UserRow) {
  const limit = postsLimit(request)
  const posts =
    limit === undefined ? undefined : postsOf(await storedRows(world.db), row.id).slice(0, limit)
  return graphqlUserOf(row, viewerOf(world, request.caller), posts)
}

/** What the users' root fields answer: anyone's profile, private fields to themself and admins. */
export const userExpectations = {
  async me(world, request, data) {
    const row = await userNamed(world, accountOf(world, request.caller).id)
    expect(row, "the caller's account").toBeDefined()
    if (row) expect(data).toEqual(await graphqlUser(world, request, row))
  },

  async user(world, request, data) {
    const row = await userNamed(world, (request.args as { id: unknown }).id)
    expect(row, 'a user answered for an id no user has').toBeDefined()
    if (row) expect(data).toEqual(await graphqlUser(world, request, row))
  },

  async users(world, request, data) {
    // In the order given, null for an id no user has, a user as often as named.
    const ids = (request.args as { ids: unknown[] }).ids
    const expected = await Promise.all(
      ids.map(async (id) => {
        const row = await userNamed(world, id)
        return row ? graphqlUser(world, request, row) : null
      }),
    )
    expect(data).toEqual(expected)
  },
} satisfies Partial<Record<RootFieldName, Expectation>>
