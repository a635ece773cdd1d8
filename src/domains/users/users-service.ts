import { randomBytes } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import { isUniqueViolation } from '../../db/errors.js'
import type { UserRow } from '../../db/schema.js'
import { conflict } from '../../platform/errors.js'
import { hashPassword } from './password.js'
import type { UsersRepository } from './users-repository.js'

export interface SignUp {
  name: string
  email: string
  password: string
  age?: number | undefined
}

export function createUsersService({ users }: { users: UsersRepository }) {
  return {
    async signUp({ password, age, ...fields }: SignUp): Promise<UserRow> {
      const passwordHash = await hashPassword(password)
      try {
        return await users.insert({ ...fields, age: age ?? null, passwordHash, role: 'user' })
      } catch (error) {
        if (isUniqueViolation(error)) throw conflict('A user with this email already exists')
        throw error
      }
    },

    /**
     * The configured admin is created or updated; with none configured and no admin in
     * the database, admin@localhost gets a random password that is logged this once.
     */
    async ensureAdmin(
      configured: { email: string; password: string } | undefined,
      log: FastifyBaseLogger,
    ): Promise<void> {
      if (configured) {
        await users.upsertAdmin(configured.email, await hashPassword(configured.password))
        return
      }
      if (await users.hasAdmin()) return
      const password = randomBytes(12).toString('base64url')
      await users.upsertAdmin('admin@localhost', await hashPassword(password))
      log.warn(
        { email: 'admin@localhost', password },
        'created the first admin; set ADMIN_EMAIL and ADMIN_PASSWORD to choose your own',
      )
    },
  }
}

export type UsersService = ReturnType<typeof createUsersService>
