import { createHash } from 'node:crypto'
import { eq, sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { accountTokens } from '../src/db/schema.js'
import { accountState, emailedToken, LINKS, tokenIn } from './helpers/account-emails.js'
import type { ApiResponse } from './helpers/api.js'
import { backends } from './helpers/backends.js'
import { login, newUser, startServer, type TestServer } from './helpers/server.js'
import { type SmtpSink, smtpSink } from './helpers/smtp-sink.js'

/**
 * POST /auth/password-reset and its confirm (DESIGN §11): the same answer, from the same
 * statements, for a known and an unknown address; a single-use, expiring token, stored
 * hashed, emailed through the outbox; a confirm that changes the password and ends every
 * session, atomically, once per token.
 */

const NEW_PASSWORD = 'a-reset-password-1'
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

const expectRefused = (response: ApiResponse, status: number, code: string) => {
  expect(response.status, response.text).toBe(status)
  expect(response.body.error.code).toBe(code)
}

/**
 * What the server's pollers send on their own, at any time: the email worker's claim,
 * the events outbox's relay, the pruning of idempotency keys and abandoned uploads. A
 * reset touches none of these tables.
 */
const POLLERS = /update "emails"|pg_try_advisory_xact_lock|"outbox"|"idempotency_keys"|"uploads"/

/** The headers of an answer that may differ between any two requests. */
const PER_REQUEST = new Set(['date', 'x-request-id'])
const headersOf = (response: ApiResponse) =>
  [...response.headers.entries()].filter(([name]) => !PER_REQUEST.has(name))

/** A raw email's text as sent, its quoted-printable soft breaks and escapes undone. */
const decoded = (raw: string) =>
  raw
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))

describe.each(backends)('password reset on $name', (backend) => {
  let server: TestServer
  let smtp: SmtpSink
  // Every statement drizzle sends while recording: the request's, and the pollers'.
  let recorded: { query: string; params: unknown[] }[] | undefined
  const db = () => server.testDatabase.database.db

  const requestReset = (email: string) =>
    server.api.post('/auth/password-reset', { json: { email } })
  const confirm = (body: unknown) => server.api.post('/auth/password-reset/confirm', { json: body })
  /** A new account with a reset token emailed to it. */
  async function withResetToken() {
    const account = await newUser(server.api)
    expect((await requestReset(account.email)).status).toBe(202)
    return { account, token: await emailedToken(db(), account.email, LINKS.passwordReset) }
  }
  const logIn = (email: string, password: string) =>
    server.api.post('/auth/login', { json: { email, password } })

  beforeAll(async () => {
    smtp = await smtpSink()
    server = await startServer(
      backend,
      { SMTP_URL: smtp.url, EMAIL_POLL_INTERVAL_MS: '50' },
      {
        databaseLogger: {
          logQuery: (query, params) => recorded?.push({ query, params }),
        },
      },
    )
  })
  afterAll(async () => {
    await server?.close()
    await smtp?.close()
  })

  it('answers a known and an unknown address alike: status, body and headers', async () => {
    const account = await newUser(server.api)
    const known = await requestReset(account.email.toUpperCase())
    const unknown = await requestReset(`nobody-${Date.now()}@example.com`)
    expect(known.status).toBe(202)
    expect(known.body).toEqual({ data: { status: 'accepted' } })
    expect(unknown.text).toBe(known.text)
    expect(headersOf(unknown)).toEqual(headersOf(known))
  })

  it('sends a known and an unknown address through the same statements', async () => {
    const account = await newUser(server.api)
    // The email worker polls the outbox meanwhile; its statements are not the request's.
    const ofRequest = async (email: string) => {
      recorded = []
      expect((await requestReset(email)).status).toBe(202)
      const statements = recorded.filter(({ query }) => !POLLERS.test(query))
      recorded = undefined
      return statements
    }
    const known = await ofRequest(account.email)
    const unknown = await ofRequest(`nobody-${Date.now()}@example.com`)
    expect(known.map(({ query }) => query)).toEqual(unknown.map(({ query }) => query))
    expect(known.map(({ params }) => params.length)).toEqual(
      unknown.map(({ params }) => params.length),
    )
    expect(known).toHaveLength(1)
    // Only the known address stored a token (with an email); the statement was the same.
    const tokens = await db()
      .select()
      .from(accountTokens)
      .where(eq(accountTokens.userId, account.user.id))
    expect(tokens.filter((token) => token.purpose === 'password-reset')).toHaveLength(1)
  })

  it('stores only the hash of a random token, valid PASSWORD_RESET_TTL seconds', async () => {
    const { account, token } = await withResetToken()
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const [stored, ...more] = await db()
      .select({
        tokenHash: accountTokens.tokenHash,
        purpose: accountTokens.purpose,
        usedAt: accountTokens.usedAt,
        lifeSeconds: sql<number>`extract(epoch from ${accountTokens.expiresAt} - ${accountTokens.createdAt})::int`,
      })
      .from(accountTokens)
      .where(
        sql`${accountTokens.userId} = ${account.user.id} and ${accountTokens.purpose} = 'password-reset'`,
      )
    expect(more).toEqual([])
    expect(stored).toEqual({
      tokenHash: sha256(token),
      purpose: 'password-reset',
      usedAt: null,
      lifeSeconds: 1800,
    })
  })

  it('delivers the email through SMTP, and its link resets the password', async () => {
    const account = await newUser(server.api)
    expect((await requestReset(account.email)).status).toBe(202)
    const mail = () =>
      smtp.deliveredTo(account.email).find((each) => each.raw.includes('Reset your password'))
    await expect.poll(mail, { timeout: 10_000, interval: 25 }).toBeDefined()
    const token = tokenIn(decoded(mail()?.raw ?? ''), LINKS.passwordReset)
    expect(token).toBeDefined()
    expect((await confirm({ token, newPassword: NEW_PASSWORD })).status).toBe(204)
    expect((await logIn(account.email, NEW_PASSWORD)).status).toBe(200)
  })

  it('changes the password and ends every session; the token works once', async () => {
    const { account, token } = await withResetToken()
    const other = await login(server.api, { email: account.email, password: account.password })
    const response = await confirm({ token, newPassword: NEW_PASSWORD })
    expect(response.status, response.text).toBe(204)
    for (const refreshToken of [account.refreshToken, other.refreshToken]) {
      const refreshed = await server.api.post('/auth/refresh', { json: { refreshToken } })
      expectRefused(refreshed, 401, 'UNAUTHENTICATED')
    }
    expectRefused(await logIn(account.email, account.password), 401, 'UNAUTHENTICATED')
    expect((await logIn(account.email, NEW_PASSWORD)).status).toBe(200)
    const before = await accountState(db(), account.user.id)
    expectRefused(await confirm({ token, newPassword: 'another-password' }), 400, 'BAD_REQUEST')
    expect(await accountState(db(), account.user.id)).toBe(before)
  })

  it("retires the account's other reset tokens", async () => {
    const { account, token: first } = await withResetToken()
    expect((await requestReset(account.email)).status).toBe(202)
    const second = await emailedToken(db(), account.email, LINKS.passwordReset)
    expect(second).not.toBe(first)
    expect((await confirm({ token: second, newPassword: NEW_PASSWORD })).status).toBe(204)
    expectRefused(
      await confirm({ token: first, newPassword: 'another-password' }),
      400,
      'BAD_REQUEST',
    )
    expect((await logIn(account.email, NEW_PASSWORD)).status).toBe(200)
  })

  it('lets exactly one of two concurrent confirms with one token succeed', async () => {
    const { account, token } = await withResetToken()
    const answers = await Promise.all(
      ['first-password-1', 'second-password-2'].map((newPassword) =>
        confirm({ token, newPassword }),
      ),
    )
    expect(answers.map((answer) => answer.status).sort()).toEqual([204, 400])
    const winner = answers.findIndex((answer) => answer.status === 204)
    const password = ['first-password-1', 'second-password-2'][winner] as string
    expect((await logIn(account.email, password)).status).toBe(200)
  })

  describe('refusals, changing nothing', () => {
    /** The account's state, the refusal, and the state again: the same. */
    async function refusedAlike(
      body: (token: string) => unknown,
      code: string,
      prepare?: (token: string) => Promise<void>,
    ) {
      const { account, token } = await withResetToken()
      await prepare?.(token)
      const before = await accountState(db(), account.user.id)
      expectRefused(await confirm(body(token)), 400, code)
      expect(await accountState(db(), account.user.id)).toBe(before)
      expect((await logIn(account.email, account.password)).status).toBe(200)
    }

    it('an unknown token', () =>
      refusedAlike(() => ({ token: 'x'.repeat(43), newPassword: NEW_PASSWORD }), 'BAD_REQUEST'))

    it('an expired token', () =>
      refusedAlike(
        (token) => ({ token, newPassword: NEW_PASSWORD }),
        'BAD_REQUEST',
        async (token) => {
          await db()
            .update(accountTokens)
            .set({ expiresAt: sql`now() - interval '1 second'` })
            .where(eq(accountTokens.tokenHash, sha256(token)))
        },
      ))

    it('a token of the other purpose (email verification)', async () => {
      const account = await newUser(server.api)
      const verification = await emailedToken(db(), account.email, LINKS.emailVerification)
      const before = await accountState(db(), account.user.id)
      const response = await confirm({ token: verification, newPassword: NEW_PASSWORD })
      expectRefused(response, 400, 'BAD_REQUEST')
      expect(await accountState(db(), account.user.id)).toBe(before)
    })

    it.each([
      ['no token', () => ({ newPassword: NEW_PASSWORD })],
      ['no new password', (token: string) => ({ token })],
      ['an unknown field', (token: string) => ({ token, newPassword: NEW_PASSWORD, admin: true })],
      ['a new password shorter than 8', (token: string) => ({ token, newPassword: 'short' })],
      ['an empty token', () => ({ token: '', newPassword: NEW_PASSWORD })],
    ])('%s, the token staying usable', async (_, body) => {
      await refusedAlike(body, 'VALIDATION_ERROR')
    })

    it.each([
      ['no email', {}],
      ['an empty email', { email: '' }],
      ['an unknown field', { email: 'someone@example.com', role: 'admin' }],
      ['an email that is not a string', { email: 42 }],
    ])('a reset request with %s', async (_, body) => {
      const account = await newUser(server.api)
      const before = await accountState(db(), account.user.id)
      const response = await server.api.post('/auth/password-reset', { json: body })
      expectRefused(response, 400, 'VALIDATION_ERROR')
      expect(await accountState(db(), account.user.id)).toBe(before)
    })
  })
})

describe.each(backends)('password reset budgets on $name', (backend) => {
  const BUDGET = 3
  let server: TestServer
  let addresses = 0
  const freshAddress = () => {
    addresses += 1
    return `10.3.${addresses >> 8}.${addresses & 255}`
  }
  const requestReset = (email: string, from: string) =>
    server.api.post('/auth/password-reset', {
      json: { email },
      headers: { 'x-forwarded-for': from },
    })

  beforeAll(async () => {
    server = await startServer(backend, {
      RATE_LIMIT_MAX: '100000',
      AUTH_RATE_LIMIT_MAX: String(BUDGET),
      TRUST_PROXY: 'loopback',
    })
  })
  afterAll(() => server?.close())

  it('budgets every request per address', async () => {
    const from = freshAddress()
    for (let sent = 0; sent < BUDGET; sent += 1) {
      expect((await requestReset(`someone-${sent}@example.com`, from)).status).toBe(202)
    }
    expectRefused(await requestReset('someone-else@example.com', from), 429, 'RATE_LIMITED')
    expect((await requestReset('someone-else@example.com', freshAddress())).status).toBe(202)
  })

  it('budgets every request per account, whatever the address', async () => {
    const email = `target-${Date.now()}@example.com`
    for (let sent = 0; sent < BUDGET; sent += 1) {
      expect((await requestReset(email, freshAddress())).status).toBe(202)
    }
    expectRefused(await requestReset(email.toUpperCase(), freshAddress()), 429, 'RATE_LIMITED')
  })

  it('budgets refused confirms per address', async () => {
    const from = freshAddress()
    const confirm = () =>
      server.api.post('/auth/password-reset/confirm', {
        json: { token: 'y'.repeat(43), newPassword: NEW_PASSWORD },
        headers: { 'x-forwarded-for': from },
      })
    for (let guess = 0; guess < BUDGET; guess += 1) {
      expectRefused(await confirm(), 400, 'BAD_REQUEST')
    }
    expectRefused(await confirm(), 429, 'RATE_LIMITED')
  })
})
