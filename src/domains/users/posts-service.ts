import type { PostRow } from '../../db/schema.js'
import { assertValidFields, forbidden, notFound } from '../../platform/errors.js'
import type { Principal } from '../../platform/infrastructure/access-tokens.js'
import { readableTextProblem } from '../../platform/input-rules.js'
import { type PageRequest, pagePagination } from '../../platform/pagination.js'
import type { PostsRepository } from './posts-repository.js'
import type { UsersRepository } from './users-repository.js'
import { missingUser } from './users-service.js'

export interface PostDraft {
  title: string
  body?: string | undefined
}

interface Dependencies {
  posts: PostsRepository
  users: Pick<UsersRepository, 'findById' | 'wasDeleted'>
}

const noPost = (userId: number, postId: number) =>
  notFound(`User ${userId} has no post with the id ${postId}`)

/** Posts are public to read; a user writes and deletes their own, an admin anyone's. */
export function createPostsService({ posts, users }: Dependencies) {
  /** A deleted account is GONE, an id never used NOT_FOUND. */
  async function assertUserExists(userId: number): Promise<void> {
    if (!(await users.findById(userId))) await missingUser(users, userId)
  }
  function assertMayWrite(caller: Principal, userId: number): void {
    if (caller.role !== 'admin' && caller.userId !== userId) {
      throw forbidden("Only the user themself or an admin may change a user's posts")
    }
  }

  return {
    async page(userId: number, page: PageRequest) {
      const [, { rows, total }] = await Promise.all([
        assertUserExists(userId),
        posts.page(userId, page),
      ])
      return { items: rows, pagination: pagePagination(page, total) }
    },

    async write(caller: Principal, userId: number, { title, body = '' }: PostDraft) {
      // The title's rules are its schema's, checked as the schema is: before who may write.
      assertValidFields({ title: readableTextProblem(title) })
      assertMayWrite(caller, userId)
      await assertUserExists(userId)
      return posts.insert({ userId, title, body })
    },

    async get(userId: number, postId: number): Promise<PostRow> {
      const post = await posts.find(userId, postId)
      if (post) return post
      await assertUserExists(userId)
      throw noPost(userId, postId)
    },

    async delete(caller: Principal, userId: number, postId: number): Promise<void> {
      assertMayWrite(caller, userId)
      if (await posts.delete(userId, postId)) return
      await assertUserExists(userId)
      throw noPost(userId, postId)
    },

    /** The newest `limit` posts of each user, read in one statement for all of them. */
    async newestOf(userIds: readonly number[], limit: number): Promise<Map<number, PostRow[]>> {
      const byUser = new Map<number, PostRow[]>(userIds.map((id) => [id, []]))
      for (const post of await posts.newestOf([...new Set(userIds)], limit)) {
        byUser.get(post.userId)?.push(post)
      }
      return byUser
    },
  }
}

export type PostsService = ReturnType<typeof createPostsService>
