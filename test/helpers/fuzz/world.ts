import { eq } from 'drizzle-orm'
import fc from 'fast-check'
import type { Database } from '../../../src/db/client.js'
import { users } from '../../../src/db/schema.js'
import type { Backend } from '../backends.js'
import { ADMIN, login, newUser, startServer, type TestServer } from '../server.js'
import type { Caller, Tokens } from './callers.js'
import { type Generation, isPlaceholder, type Placeholder } from './rest-requests.js'

export interface Account {
  id: number
  name: string
  email: string
  password: string
}

/** A server with a known cast: an admin, a user, and products live and deleted. */
export interface World {
  server: TestServer
  db: Database
  tokens: Tokens
  accounts: { user: Account; admin: Account }
  /** Ids of products made before the run: two live, one deleted. */
  productIds: number[]
}

const FIXTURE_PRODUCT = { name: 'Fuzz fixture', price: 9.99, category: 'fuzz', stock: 5 }

export async function createWorld(backend: Backend): Promise<World> {
  const server = await startServer(backend)
  const admin = await login(server.api, ADMIN)
  const user = await newUser(server.api)
  const productIds: number[] = []
  for (let made = 0; made < 3; made += 1) {
    const created = await server.api.post('/products', {
      json: FIXTURE_PRODUCT,
      token: admin.accessToken,
    })
    productIds.push(created.body.data.id)
  }
  await server.api.delete(`/products/${productIds[2]}`, { token: admin.accessToken })
  const [adminRow] = await server.testDatabase.database.db
    .select()
    .from(users)
    .where(eq(users.email, ADMIN.email))
  if (!adminRow) throw new Error('the configured admin was not created')
  return {
    server,
    db: server.testDatabase.database.db,
    tokens: { user: user.accessToken, admin: admin.accessToken },
    accounts: {
      user: { id: user.user.id, name: user.user.name, email: user.email, password: user.password },
      admin: { id: adminRow.id, name: adminRow.name, ...ADMIN },
    },
    productIds,
  }
}

/** The email in letters of random case: emails match regardless of it. */
const anyCase = (email: string) =>
  fc
    .array(fc.boolean(), { minLength: email.length, maxLength: email.length })
    .map((upper) => [...email].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join(''))

/** What the generators need of the world: tokens, and values that hit its data. */
export function generationOf(world: World): Generation {
  const { user, admin } = world.accounts
  const credentials = fc
    .constantFrom(user, admin)
    .chain((account) =>
      fc.record({ email: anyCase(account.email), password: fc.constant(account.password) }),
    )
  const issued = fc.constantFrom<Placeholder['placeholder']>(
    'ownRefreshToken',
    'rotatedRefreshToken',
  )
  const refreshBody = issued.map((placeholder) => ({ refreshToken: { placeholder } }))
  return {
    tokens: world.tokens,
    hints: {
      // The fixtures, and ids the run's own creations take.
      parameters: {
        id: fc.oneof(fc.constantFrom(...world.productIds), fc.integer({ min: 1, max: 60 })),
      },
      bodies: { login: credentials, refreshTokens: refreshBody, logout: refreshBody },
    },
  }
}

/** The account whose session a caller's placeholder token belongs to. */
const accountOf = (world: World, caller: Caller): Account =>
  caller === 'admin' ? world.accounts.admin : world.accounts.user

/** Swaps placeholders in a body for refresh tokens issued now, to the caller's account. */
export async function resolvePlaceholders(
  world: World,
  caller: Caller,
  body: unknown,
): Promise<unknown> {
  if (typeof body !== 'object' || body === null) return body
  if (isPlaceholder(body)) return issueRefreshToken(world, caller, body.placeholder)
  const entries = await Promise.all(
    Object.entries(body).map(async ([key, value]) => [
      key,
      await resolvePlaceholders(world, caller, value),
    ]),
  )
  return Object.fromEntries(entries)
}

async function issueRefreshToken(
  world: World,
  caller: Caller,
  kind: Placeholder['placeholder'],
): Promise<string> {
  const { api } = world.server
  const { email, password } = accountOf(world, caller)
  const { refreshToken } = await login(api, { email, password })
  if (kind === 'ownRefreshToken') return refreshToken
  // Rotated: exchanged once already, so presenting it again is a reuse.
  const rotated = await api.post('/auth/refresh', { json: { refreshToken } })
  if (rotated.status !== 200) throw new Error(`refresh failed: ${rotated.text}`)
  return refreshToken
}
