import type { components } from '../../../generated/openapi.js'
import type { PostRow } from '../../db/schema.js'
import { defaulted, type ServiceHandlers } from '../../http/operations.js'
import { principalOf } from '../../http/security.js'
import type { PostsService } from './posts-service.js'

type Post = components['schemas']['Post']

export function createPostHandlers(posts: PostsService) {
  return {
    async listUserPosts(request) {
      const { page, limit } = request.query
      const result = await posts.page(request.params.id, {
        page: defaulted(page, 'page'),
        limit: defaulted(limit, 'limit'),
      })
      return { data: result.items.map(toPost), pagination: result.pagination }
    },

    async createUserPost(request, reply) {
      const { id } = request.params
      const post = await posts.write(principalOf(request), id, request.body)
      reply.code(201).header('location', `/users/${id}/posts/${post.id}`)
      return { data: toPost(post) }
    },

    async getUserPost(request) {
      const { id, postId } = request.params
      return { data: toPost(await posts.get(id, postId)) }
    },

    async deleteUserPost(request, reply) {
      const { id, postId } = request.params
      await posts.delete(principalOf(request), id, postId)
      return reply.code(204).send()
    },
  } satisfies Partial<ServiceHandlers>
}

function toPost(row: PostRow): Post {
  return {
    id: row.id,
    userId: row.userId,
    title: row.title,
    body: row.body,
    createdAt: row.createdAt.toISOString(),
  }
}
