import type { components } from '../../../generated/openapi.js'
import type { PostRow, UserRow } from '../../../src/db/schema.js'
import type { Caller } from './callers.js'
import type { StoredRows } from './database-state.js'
import { accountOf, type World } from './world.js'

export type Post = components['schemas']['Post']
export type User = components['schemas']['User']
export type UserProfile = components['schemas']['UserProfile']

/** What anyone may see of a user over REST: never their email, role or password. */
export const profileOf = (row: UserRow): UserProfile => ({
  id: row.id,
  name: row.name,
  age: row.age,
  createdAt: row.createdAt.toISOString(),
})

/** The whole account, as the user themself and admins see it over REST. */
export const fullUserOf = (row: UserRow): User => ({
  id: row.id,
  name: row.name,
  email: row.email,
  age: row.age,
  role: row.role,
  createdAt: row.createdAt.toISOString(),
  emailVerified: row.emailVerifiedAt !== null,
  twoFactorEnabled: row.twoFactorEnabled,
  phoneNumber: row.phoneNumber,
})

/** Newest first, ties by id descending (as listUsers documents). */
export const newestUsersFirst = (a: UserRow, b: UserRow) =>
  b.createdAt.getTime() - a.createdAt.getTime() || b.id - a.id

export const postOf = (row: PostRow): Post => ({
  id: row.id,
  userId: row.userId,
  title: row.title,
  body: row.body,
  createdAt: row.createdAt.toISOString(),
})

/** Newest first, ties by id descending (as listUserPosts documents); ms clocks tie. */
export const newestPostsFirst = (a: PostRow, b: PostRow) =>
  b.createdAt.getTime() - a.createdAt.getTime() || b.id - a.id

/** One user's posts, newest first. */
export const postsOf = (rows: StoredRows, userId: number): PostRow[] =>
  [...rows.posts.values()].filter((post) => post.userId === userId).sort(newestPostsFirst)

/** The post `postId` of user `userId`: another user's post is as none. */
export function postOfUser(rows: StoredRows, userId: unknown, postId: unknown) {
  const post = rows.posts.get(postId as number)
  return post !== undefined && post.userId === userId ? post : undefined
}

/** The account a signed-in caller is, undefined for anyone else (forged tokens are no one). */
export type Viewer = { role: 'user' | 'admin'; userId: number } | undefined

export const viewerOf = (world: World, caller: Caller): Viewer =>
  caller === 'user' || caller === 'admin'
    ? { role: caller, userId: accountOf(world, caller).id }
    : undefined

/** May the viewer write and delete the posts of `userId`: the user themself, or an admin. */
export const writesFor = (viewer: Viewer, userId: unknown) =>
  viewer !== undefined && (viewer.role === 'admin' || viewer.userId === userId)

/**
 * A user as GraphQL shows them to the viewer: email, phone number, verified email and
 * second factor to the user themself and to admins only (the email is "" to others,
 * the rest null); `posts` when the document selects them, newest first.
 */
export function graphqlUserOf(
  row: UserRow,
  viewer: Viewer,
  posts: PostRow[] | undefined,
): Record<string, unknown> {
  const sees = viewer !== undefined && (viewer.role === 'admin' || viewer.userId === row.id)
  return {
    id: String(row.id),
    name: row.name,
    email: sees ? row.email : '',
    emailVerified: sees ? row.emailVerifiedAt !== null : null,
    age: row.age,
    phoneNumber: sees ? row.phoneNumber : null,
    twoFactorEnabled: sees ? row.twoFactorEnabled : null,
    ...(posts && {
      posts: posts.map(({ id, title, body, createdAt }) => ({
        id: String(id),
        title,
        body,
        createdAt: createdAt.toISOString(),
      })),
    }),
  }
}
