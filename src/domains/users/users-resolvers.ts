import type { UserPostsArgs } from '../../../generated/graphql.js'
import type { UserRow } from '../../db/schema.js'
import { callerOf, type GraphQLContext } from '../../graphql/context.js'
import type { GraphQLLoaders } from '../../graphql/loaders.js'
import { notFound } from '../../platform/errors.js'
import { rowIdOf } from '../../platform/input-rules.js'
import type { DomainResolvers } from '../domain-module.js'
import type { PostsService } from './posts-service.js'
import type { UsersService } from './users-service.js'

const DEFAULT_POSTS = 20

/** Whether the caller may see a user's private fields: the user themself, or an admin. */
const seesPrivateFieldsOf = (context: Pick<GraphQLContext, 'principal'>, user: UserRow) =>
  context.principal?.role === 'admin' || context.principal?.userId === user.id

const userIdOf = (id: string) => {
  const userId = rowIdOf(id)
  if (userId === undefined) throw notFound(`No user has the id ${id}`)
  return userId
}

export function createUserResolvers(users: UsersService) {
  return {
    User: {
      id: (user) => String(user.id),
      // Hidden as GitHub's API hides it: the field stays non-null, and empty.
      email: (user, _args, context) => (seesPrivateFieldsOf(context, user) ? user.email : ''),
      emailVerified: (user, _args, context) =>
        seesPrivateFieldsOf(context, user) ? user.emailVerifiedAt !== null : null,
      phoneNumber: (user, _args, context) =>
        seesPrivateFieldsOf(context, user) ? user.phoneNumber : null,
      twoFactorEnabled: (user, _args, context) =>
        seesPrivateFieldsOf(context, user) ? user.twoFactorEnabled : null,
    },
    Post: {
      id: (post) => String(post.id),
      createdAt: (post) => post.createdAt.toISOString(),
      author: (post) => users.get(post.userId),
    },
    Query: {
      me: (_root, _args, context) => users.get(callerOf(context).userId),
      user: (_root, { id }) => users.get(userIdOf(id)),
      // As many ids as schema.graphql's range allows (graphql/argument-ranges.ts).
      users: (_root, { ids }) =>
        Promise.all(
          ids.map(async (id) => {
            const userId = rowIdOf(id)
            return (userId === undefined ? undefined : await users.find(userId)) ?? null
          }),
        ),
    },
  } satisfies DomainResolvers
}

/**
 * `User.posts` of every user in an operation (or an event), read in one statement; each
 * `limit` in its range, which schema.graphql declares (graphql/argument-ranges.ts).
 */
export function createUserLoaders(posts: PostsService) {
  return {
    User: {
      async posts(queries) {
        const limits = queries.map(({ params }) => (params as UserPostsArgs).limit ?? DEFAULT_POSTS)
        const newest = await posts.newestOf(
          queries.map(({ obj }) => obj.id),
          Math.max(...limits),
        )
        return queries.map(({ obj }, index) => (newest.get(obj.id) ?? []).slice(0, limits[index]))
      },
    },
  } satisfies GraphQLLoaders
}
