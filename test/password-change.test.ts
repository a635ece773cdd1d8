import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { accountState } from './helpers/account-emails.js'
import type { ApiResponse } from './helpers/api.js'
import { backends } from './helpers/backends.js'
import { login, newUser, startServer, type TestServer } from './helpers/server.js'

/**
 * POST /auth/password and POST /auth/logout-all (DESIGN §11): a change of password ends
 * every session of the account, the caller's own included, and answers the one pair
 * that works afterwards; logout-all ends every session. A wrong current password, or a
 * body that breaks the rules, changes nothing.
 */

const NEW_PASSWORD = 'a-new-password-1'

const expectRefused = (response: ApiResponse, status: number, code: string) => {
  expect(response.status, response.text).toBe(status)
  expect(response.body.error.code).toBe(code)
}

describe.each(backends)('password change and logout-all on $name', (backend) => {
  let server: TestServer
  const db = () => server.testDatabase.database.db

  /** A new account logged in twice: two sessions, on two devices. */
  async function twoSessions() {
    const account = await newUser(server.api)
    const credentials = { email: account.email, password: account.password }
    const other = await login(server.api, credentials)
    return { ...account, credentials, sessions: [account.refreshToken, other.refreshToken] }
  }
  const refresh = (refreshToken: string) =>
    server.api.post('/auth/refresh', { json: { refreshToken } })
  const change = (token: string, body: unknown) =>
    server.api.post('/auth/password', { json: body, token })

  beforeAll(async () => {
    server = await startServer(backend)
  })
  afterAll(() => server?.close())

  it('answers a new pair, ends every earlier session, and only the new password logs in', async () => {
    const account = await twoSessions()
    const response = await change(account.accessToken, {
      currentPassword: account.password,
      newPassword: NEW_PASSWORD,
    })
    expect(response.status, response.text).toBe(200)
    expect(response.headers.get('cache-control')).toBe('no-store')
    const pair = response.body.data
    expect(pair).toEqual({
      accessToken: expect.any(String),
      refreshToken: expect.any(String),
      tokenType: 'Bearer',
      expiresIn: expect.any(Number),
    })
    for (const earlier of account.sessions) expect((await refresh(earlier)).status).toBe(401)
    expect((await refresh(pair.refreshToken)).status).toBe(200)
    const stale = await server.api.post('/auth/login', { json: account.credentials })
    expectRefused(stale, 401, 'UNAUTHENTICATED')
    const fresh = await server.api.post('/auth/login', {
      json: { email: account.email, password: NEW_PASSWORD },
    })
    expect(fresh.status, fresh.text).toBe(200)
  })

  it('refuses a wrong current password with 401, changing nothing', async () => {
    const account = await twoSessions()
    const before = await accountState(db(), account.user.id)
    const response = await change(account.accessToken, {
      currentPassword: 'not-the-password',
      newPassword: NEW_PASSWORD,
    })
    expectRefused(response, 401, 'UNAUTHENTICATED')
    expect(await accountState(db(), account.user.id)).toBe(before)
    expect((await refresh(account.sessions[1] as string)).status).toBe(200)
  })

  it.each([
    ['no current password', { newPassword: NEW_PASSWORD }],
    ['no new password', { currentPassword: 'user-password-1' }],
    ['an unknown field', { currentPassword: 'user-password-1', newPassword: NEW_PASSWORD, x: 1 }],
    ['a new password shorter than 8', { currentPassword: 'user-password-1', newPassword: 'short' }],
    [
      'a new password longer than 128',
      { currentPassword: 'user-password-1', newPassword: 'p'.repeat(129) },
    ],
    [
      'a new password that is not a string',
      { currentPassword: 'user-password-1', newPassword: 12345678 },
    ],
  ])('refuses %s with 400, changing nothing', async (_, body) => {
    const account = await twoSessions()
    const before = await accountState(db(), account.user.id)
    expectRefused(await change(account.accessToken, body), 400, 'VALIDATION_ERROR')
    expect(await accountState(db(), account.user.id)).toBe(before)
  })

  it('needs a bearer token', async () => {
    const response = await server.api.post('/auth/password', {
      json: { currentPassword: 'user-password-1', newPassword: NEW_PASSWORD },
    })
    expectRefused(response, 401, 'UNAUTHENTICATED')
  })

  it('logout-all ends every session of the account and of no other', async () => {
    const account = await twoSessions()
    const bystander = await twoSessions()
    const response = await server.api.post('/auth/logout-all', { token: account.accessToken })
    expect(response.status, response.text).toBe(204)
    for (const session of account.sessions) expect((await refresh(session)).status).toBe(401)
    expect((await refresh(bystander.sessions[0] as string)).status).toBe(200)
    // The password stands: the owner logs in again.
    expect((await server.api.post('/auth/login', { json: account.credentials })).status).toBe(200)
  })

  it('logout-all needs a bearer token', async () => {
    expectRefused(await server.api.post('/auth/logout-all'), 401, 'UNAUTHENTICATED')
  })
})

describe.each(backends)('password change budgets on $name', (backend) => {
  const BUDGET = 3
  let server: TestServer
  let accounts = 0
  /** A new account signed up from an address of its own: sign-ups are budgeted too. */
  async function account() {
    accounts += 1
    const credentials = {
      email: `budget-${accounts}-${Date.now()}@example.com`,
      password: 'pw-12345678',
    }
    const created = await server.api.post('/users', {
      json: { name: 'Budget', ...credentials },
      headers: { 'x-forwarded-for': `10.2.0.${accounts}` },
    })
    expect(created.status, created.text).toBe(201)
    return { ...credentials, ...(await login(server.api, credentials)) }
  }

  beforeAll(async () => {
    server = await startServer(backend, {
      RATE_LIMIT_MAX: '100000',
      AUTH_RATE_LIMIT_MAX: String(BUDGET),
      TRUST_PROXY: 'loopback',
    })
  })
  afterAll(() => server?.close())

  it('budgets wrong current passwords per account, whatever the address', async () => {
    const owner = await account()
    const attempt = (currentPassword: string, from: string) =>
      server.api.post('/auth/password', {
        json: { currentPassword, newPassword: NEW_PASSWORD },
        token: owner.accessToken,
        headers: { 'x-forwarded-for': from },
      })
    for (let guess = 0; guess < BUDGET; guess += 1) {
      expectRefused(await attempt(`guess-${guess}`, `10.1.0.${guess}`), 401, 'UNAUTHENTICATED')
    }
    // Spent: even the right password waits for the window, from a new address too.
    const refused = await attempt(owner.password, '10.1.1.1')
    expectRefused(refused, 429, 'RATE_LIMITED')
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    // Another account's budget is its own.
    const other = await account()
    const own = await server.api.post('/auth/password', {
      json: { currentPassword: other.password, newPassword: NEW_PASSWORD },
      token: other.accessToken,
    })
    expect(own.status, own.text).toBe(200)
  })

  it('does not count a change that succeeds', async () => {
    let { accessToken, password } = await account()
    for (let change = 0; change <= BUDGET; change += 1) {
      const next = `${NEW_PASSWORD}-${change}`
      const response = await server.api.post('/auth/password', {
        json: { currentPassword: password, newPassword: next },
        token: accessToken,
      })
      expect(response.status, response.text).toBe(200)
      accessToken = response.body.data.accessToken
      password = next
    }
  })
})
