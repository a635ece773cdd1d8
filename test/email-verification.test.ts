import { createHash } from 'node:crypto'
import { eq, sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { accountTokens, emails, users } from '../src/db/schema.js'
import { accountState, emailedToken, LINKS } from './helpers/account-emails.js'
import type { ApiResponse } from './helpers/api.js'
import { backends } from './helpers/backends.js'
import { newUser, startServer, type TestServer } from './helpers/server.js'

/**
 * Email verification (DESIGN §11): sign-up queues an email whose link carries a
 * single-use token, stored hashed, valid EMAIL_VERIFY_TTL seconds; POST /auth/verify-email
 * with it marks the address verified, with no bearer token. Any other token is refused
 * and changes nothing.
 */

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

const expectRefused = (response: ApiResponse, status: number, code: string) => {
  expect(response.status, response.text).toBe(status)
  expect(response.body.error.code).toBe(code)
}

describe.each(backends)('email verification on $name', (backend) => {
  let server: TestServer
  const db = () => server.testDatabase.database.db
  const verify = (body: unknown) => server.api.post('/auth/verify-email', { json: body })
  const verifiedAt = async (userId: number) =>
    (await db().select().from(users).where(eq(users.id, userId)))[0]?.emailVerifiedAt
  /** A new account and the token of the email its sign-up queued. */
  async function signedUp() {
    const account = await newUser(server.api)
    return { account, token: await emailedToken(db(), account.email, LINKS.emailVerification) }
  }

  beforeAll(async () => {
    server = await startServer(backend)
  })
  afterAll(() => server?.close())

  it('queues an email at sign-up whose token is stored hashed, valid a day', async () => {
    const { account, token } = await signedUp()
    const [email, ...more] = await db()
      .select()
      .from(emails)
      .where(eq(emails.recipient, account.email))
    expect(more).toEqual([])
    expect(email?.subject).toBe('Verify your email address')
    expect(email?.text).toContain(`${LINKS.emailVerification}?token=${token}`)
    const stored = await db()
      .select({
        tokenHash: accountTokens.tokenHash,
        purpose: accountTokens.purpose,
        lifeSeconds: sql<number>`extract(epoch from ${accountTokens.expiresAt} - ${accountTokens.createdAt})::int`,
      })
      .from(accountTokens)
      .where(eq(accountTokens.userId, account.user.id))
    expect(stored).toEqual([
      { tokenHash: sha256(token), purpose: 'verify-email', lifeSeconds: 86_400 },
    ])
    expect(await verifiedAt(account.user.id)).toBeNull()
  })

  it('verifies the address with the token, once, without a bearer token', async () => {
    const { account, token } = await signedUp()
    const response = await verify({ token })
    expect(response.status, response.text).toBe(204)
    const verified = await verifiedAt(account.user.id)
    expect(verified).toBeInstanceOf(Date)
    const before = await accountState(db(), account.user.id)
    expectRefused(await verify({ token }), 400, 'BAD_REQUEST')
    expect(await accountState(db(), account.user.id)).toBe(before)
  })

  it('stores no account, token or email when the sign-up is refused', async () => {
    const { account } = await signedUp()
    const [tokensBefore, emailsBefore] = [
      await db().$count(accountTokens),
      await db().$count(emails),
    ]
    const again = await server.api.post('/users', {
      json: { name: 'Twice', email: account.email.toUpperCase(), password: 'password-again' },
    })
    expectRefused(again, 409, 'CONFLICT')
    expect([await db().$count(accountTokens), await db().$count(emails)]).toEqual([
      tokensBefore,
      emailsBefore,
    ])
  })

  describe('refusals, changing nothing', () => {
    async function refusedAlike(
      body: (token: string) => unknown,
      code: string,
      prepare?: (token: string) => Promise<void>,
    ) {
      const { account, token } = await signedUp()
      await prepare?.(token)
      const before = await accountState(db(), account.user.id)
      expectRefused(await verify(body(token)), 400, code)
      expect(await accountState(db(), account.user.id)).toBe(before)
      expect(await verifiedAt(account.user.id)).toBeNull()
    }

    it('an unknown token', () => refusedAlike(() => ({ token: 'z'.repeat(43) }), 'BAD_REQUEST'))

    it('an expired token', () =>
      refusedAlike(
        (token) => ({ token }),
        'BAD_REQUEST',
        async (token) => {
          await db()
            .update(accountTokens)
            .set({ expiresAt: sql`now() - interval '1 second'` })
            .where(eq(accountTokens.tokenHash, sha256(token)))
        },
      ))

    it('a token of the other purpose (password reset)', async () => {
      const { account } = await signedUp()
      const reset = await server.api.post('/auth/password-reset', {
        json: { email: account.email },
      })
      expect(reset.status).toBe(202)
      const resetToken = await emailedToken(db(), account.email, LINKS.passwordReset)
      const before = await accountState(db(), account.user.id)
      expectRefused(await verify({ token: resetToken }), 400, 'BAD_REQUEST')
      expect(await accountState(db(), account.user.id)).toBe(before)
    })

    it.each([
      ['no token', () => ({})],
      ['an empty token', () => ({ token: '' })],
      ['an unknown field', (token: string) => ({ token, email: 'me@example.com' })],
      ['a token that is not a string', () => ({ token: 12 })],
    ])('%s, the token staying usable', async (_, body) => {
      await refusedAlike(body, 'VALIDATION_ERROR')
    })
  })
})

describe.each(backends)('email verification budgets on $name', (backend) => {
  const BUDGET = 3
  let server: TestServer

  beforeAll(async () => {
    server = await startServer(backend, {
      RATE_LIMIT_MAX: '100000',
      AUTH_RATE_LIMIT_MAX: String(BUDGET),
      TRUST_PROXY: 'loopback',
    })
  })
  afterAll(() => server?.close())

  it('budgets refused tokens per address', async () => {
    const attempt = (from: string) =>
      server.api.post('/auth/verify-email', {
        json: { token: 'w'.repeat(43) },
        headers: { 'x-forwarded-for': from },
      })
    for (let guess = 0; guess < BUDGET; guess += 1) {
      expectRefused(await attempt('10.4.0.1'), 400, 'BAD_REQUEST')
    }
    expectRefused(await attempt('10.4.0.1'), 429, 'RATE_LIMITED')
    expectRefused(await attempt('10.4.0.2'), 400, 'BAD_REQUEST')
  })
})
