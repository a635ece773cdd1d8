import type { components } from '../../../generated/openapi.js'
import type { UserRow } from '../../db/schema.js'
import type { ServiceHandlers } from '../../http/operations.js'
import type { UsersService } from './users-service.js'

type User = components['schemas']['User']
type UserProfile = components['schemas']['UserProfile']

export function createUserHandlers(users: UsersService) {
  return {
    async createUser(request, reply) {
      const user = await users.signUp(request.body)
      reply.code(201).header('location', `/users/${user.id}`)
      return { data: toUser(user) }
    },

    async getUser(request) {
      return { data: toProfile(await users.get(request.params.id)) }
    },
  } satisfies Partial<ServiceHandlers>
}

export function toUser(row: UserRow): User {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    age: row.age,
    role: row.role,
    createdAt: row.createdAt.toISOString(),
  }
}

/** What anyone may see of a user. */
function toProfile(row: UserRow): UserProfile {
  return { id: row.id, name: row.name, age: row.age, createdAt: row.createdAt.toISOString() }
}
