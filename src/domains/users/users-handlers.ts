import type { components } from '../../../generated/openapi.js'
import type { UserRow } from '../../db/schema.js'
import { defaulted, type ServiceHandlers } from '../../http/operations.js'
import { principalOf } from '../../http/security.js'
import type { AccountsService } from './accounts-service.js'
import type { UsersService } from './users-service.js'

type User = components['schemas']['User']
type UserProfile = components['schemas']['UserProfile']

export function createUserHandlers(users: UsersService, accounts: AccountsService) {
  return {
    async listUsers(request) {
      const { page, limit, search } = request.query
      const result = await accounts.list(search, {
        page: defaulted(page, 'page'),
        limit: defaulted(limit, 'limit'),
      })
      return { data: result.items.map(toUser), pagination: result.pagination }
    },

    async createUser(request, reply) {
      const user = await users.signUp(request.body)
      reply.code(201).header('location', `/users/${user.id}`)
      return { data: toUser(user) }
    },

    async getUser(request) {
      return { data: toProfile(await users.get(request.params.id)) }
    },

    async updateUser(request) {
      const user = await accounts.update(principalOf(request), request.params.id, request.body)
      return { data: toUser(user) }
    },

    async deleteUser(request, reply) {
      await accounts.delete(principalOf(request), request.params.id)
      return reply.code(204).send()
    },
  } satisfies Partial<ServiceHandlers>
}

/** The whole account, for the user themself and for admins. */
export function toUser(row: UserRow): User {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    age: row.age,
    role: row.role,
    createdAt: row.createdAt.toISOString(),
    emailVerified: row.emailVerifiedAt !== null,
    twoFactorEnabled: row.twoFactorEnabled,
    phoneNumber: row.phoneNumber,
  }
}

/** What anyone may see of a user. */
function toProfile(row: UserRow): UserProfile {
  return { id: row.id, name: row.name, age: row.age, createdAt: row.createdAt.toISOString() }
}
