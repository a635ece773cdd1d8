import { randomBytes } from 'node:crypto'
import DataLoader from 'dataloader'
import type { FastifyBaseLogger } from 'fastify'
import type { Database, Executor } from '../../db/database.js'
import { isUniqueViolation } from '../../db/errors.js'
import type { UserRow } from '../../db/schema.js'
import { assertValidFields, conflict, gone, notFound } from '../../platform/errors.js'
import { readableTextProblem } from '../../platform/input-rules.js'
import type { AuthService } from '../auth/auth-service.js'
import type { Passwords } from './password.js'
import type { UsersRepository } from './users-repository.js'

export interface SignUp {
  name: string
  email: string
  password: string
  age?: number | undefined
}

/**
 * What the users domain needs of sessions: an account whose credentials or role change,
 * or that is deleted, loses them, on every instance once the change commits.
 */
export type Sessions = Pick<AuthService, 'endSessionsOf' | 'announce'>

/** Told of each new account in the transaction that stores it (the verification email). */
export type OnSignedUp = (user: UserRow, tx: Executor) => Promise<void>

interface Dependencies {
  db: Database
  users: UsersRepository
  sessions: Sessions
  passwords: Passwords
  onSignedUp: OnSignedUp
}

const GENERATED_ADMIN_EMAIL = 'admin@localhost'

/** Tells an account that never existed (404) from one that was deleted (410). */
export async function missingUser(
  users: Pick<UsersRepository, 'wasDeleted'>,
  id: number,
  executor?: Executor,
): Promise<never> {
  throw (await users.wasDeleted(id, executor))
    ? gone(`User ${id} was deleted`)
    : notFound(`No user has the id ${id}`)
}

export function createUsersService(dependencies: Dependencies) {
  const { db, users, sessions, passwords, onSignedUp } = dependencies
  const newAdmin = async (email: string, password: string) => ({
    name: 'Administrator',
    email,
    passwordHash: await passwords.hash(password),
    age: null,
    role: 'admin' as const,
  })

  /**
   * Brings an existing account to the configured admin's role and password. When either
   * changes, every session of the account ends: a refresh token issued to the old
   * account must not refresh into an admin's access token.
   */
  async function bringToAdmin(existing: UserRow, password: string): Promise<boolean> {
    const samePassword = await passwords.verify(password, existing.passwordHash)
    if (existing.role === 'admin' && samePassword) return false
    const passwordHash = samePassword ? existing.passwordHash : await passwords.hash(password)
    const ended = await db.transaction(async (tx) => {
      await users.setCredentials(existing.id, { passwordHash, role: 'admin' }, tx)
      return sessions.endSessionsOf(existing.id, tx)
    })
    await sessions.announce(ended)
    return true
  }

  // The lookups of one tick, from any operation, go to the database as one statement; no
  // cache: each lookup reads the account as it is then.
  const byId = new DataLoader<number, UserRow | undefined>(
    async (ids) => {
      const found = new Map((await users.findByIds(ids)).map((row) => [row.id, row]))
      return ids.map((id) => found.get(id))
    },
    { cache: false },
  )

  return {
    /** An account, or undefined when there is none; lookups made together are batched. */
    find: (userId: number): Promise<UserRow | undefined> => byId.load(userId),

    /** An account that must exist: a deleted one is GONE, an id never used NOT_FOUND. */
    async get(userId: number): Promise<UserRow> {
      return (await byId.load(userId)) ?? missingUser(users, userId)
    },

    /** The name an account goes by, or undefined when there is no such account. */
    async nameOf(userId: number): Promise<string | undefined> {
      return (await byId.load(userId))?.name
    },

    async signUp({ password, age, ...fields }: SignUp): Promise<UserRow> {
      assertValidFields({ name: readableTextProblem(fields.name) })
      const passwordHash = await passwords.hash(password)
      try {
        return await db.transaction(async (tx) => {
          const user = await users.insert(
            { ...fields, age: age ?? null, passwordHash, role: 'user' },
            tx,
          )
          await onSignedUp(user, tx)
          return user
        })
      } catch (error) {
        if (isUniqueViolation(error)) throw conflict('A user with this email already exists')
        throw error
      }
    },

    /**
     * The configured admin is created, or its account brought to the configured role and
     * password. With none configured and no admin in the database, admin@localhost gets
     * a random password, logged once: by the instance whose insert won, when several
     * start together on an empty database.
     */
    async ensureAdmin(
      configured: { email: string; password: string } | undefined,
      log: FastifyBaseLogger,
    ): Promise<void> {
      if (configured) {
        const { email, password } = configured
        const existing =
          (await users.findByEmail(email)) ??
          (await users.insertIfAbsent(await newAdmin(email, password))) ??
          (await users.findByEmail(email))
        if (existing && (await bringToAdmin(existing, password))) {
          log.warn({ email }, 'the configured admin changed role or password: its sessions ended')
        }
        return
      }
      if (await users.hasAdmin()) return
      const password = randomBytes(12).toString('base64url')
      const created = await users.insertIfAbsent(await newAdmin(GENERATED_ADMIN_EMAIL, password))
      if (created) {
        log.warn(
          { email: GENERATED_ADMIN_EMAIL, password },
          'created the first admin; set ADMIN_EMAIL and ADMIN_PASSWORD to choose your own',
        )
      } else if (!(await users.hasAdmin())) {
        log.error(
          { email: GENERATED_ADMIN_EMAIL },
          'no admin exists and admin@localhost is an ordinary account: set ADMIN_EMAIL and ADMIN_PASSWORD',
        )
      }
    },
  }
}

export type UsersService = ReturnType<typeof createUsersService>
