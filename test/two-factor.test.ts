import { createHash } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { Secret, TOTP } from 'otpauth'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { recoveryCodes, refreshTokens, users } from '../src/db/schema.js'
import { createSecretBox } from '../src/platform/secret-box.js'
import type { ApiResponse } from './helpers/api.js'
import { backends } from './helpers/backends.js'
import { graphql } from './helpers/graphql.js'
import {
  freshAccount,
  newUser,
  startServer,
  type TestServer,
  testEnvironment,
} from './helpers/server.js'

const STEP_MS = 30_000
const box = createSecretBox(testEnvironment.JWT_SECRET, 'totp-secret')

/** The 6-digit code of `secret` for time step `step`, as an authenticator app shows it. */
const codeAt = (secret: string, step: number) =>
  new TOTP({ secret: Secret.fromBase32(secret) }).generate({ timestamp: step * STEP_MS })

/** A 6-digit code that is none of the secret's codes within two steps of `step`. */
function wrongCode(secret: string, step: number) {
  const near = new Set([-2, -1, 0, 1, 2].map((offset) => codeAt(secret, step + offset)))
  for (let guess = 0; ; guess += 1) {
    const code = String(guess).padStart(6, '0')
    if (!near.has(code)) return code
  }
}

const expectMfaRequired = (response: ApiResponse) => {
  expect(response.status, response.text).toBe(401)
  expect(response.body.error.code).toBe('MFA_REQUIRED')
}

const expectValidationError = (response: ApiResponse) => {
  expect(response.status, response.text).toBe(400)
  expect(response.body.error.code).toBe('VALIDATION_ERROR')
}

/**
 * The server's clock, frozen in the middle of a time step so that a code is of the
 * step the test says: the step it holds, and steps it moves to.
 */
function frozenClock() {
  let now = (Math.floor(Date.now() / STEP_MS) + 1) * STEP_MS + STEP_MS / 2
  vi.spyOn(Date, 'now').mockImplementation(() => now)
  return {
    get step() {
      return Math.floor(now / STEP_MS)
    },
    toStep(step: number) {
      now = step * STEP_MS + STEP_MS / 2
    },
  }
}

describe.each(backends)('two-factor on $name', (backend) => {
  let server: TestServer
  const db = () => server.testDatabase.database.db

  beforeAll(async () => {
    server = await startServer(backend)
  })
  afterAll(() => server?.close())
  afterEach(() => {
    vi.restoreAllMocks()
  })

  const login = (email: string, password: string, otp?: string) =>
    server.api.post('/auth/login', { json: { email, password, ...(otp !== undefined && { otp }) } })

  /** What two-factor keeps of an account: a refused request must leave it as it was. */
  async function stored(userId: number) {
    const [row] = await db().select().from(users).where(eq(users.id, userId))
    const codes = await db()
      .select()
      .from(recoveryCodes)
      .where(eq(recoveryCodes.userId, userId))
      .orderBy(recoveryCodes.codeHash)
    const sessions = await db().$count(refreshTokens, eq(refreshTokens.userId, userId))
    return { row, codes, sessions }
  }

  /** A new account with a pending setup: its email, password, token and secret. */
  async function setUp() {
    const account = await newUser(server.api)
    const setup = await server.api.post('/auth/2fa/setup', { token: account.accessToken })
    expect(setup.status, setup.text).toBe(200)
    return { ...account, secret: setup.body.data.secret as string }
  }

  /** A new account with two-factor on, enabled with the current step's code. */
  async function enabled(clock: ReturnType<typeof frozenClock>) {
    const account = await setUp()
    const code = codeAt(account.secret, clock.step)
    const response = await server.api.post('/auth/2fa/enable', {
      json: { code },
      token: account.accessToken,
    })
    expect(response.status, response.text).toBe(200)
    return { ...account, recoveryCodes: response.body.data.recoveryCodes as string[] }
  }

  it('sets up, enables, logs in once per code within the drift, and disables', async () => {
    const clock = frozenClock()
    const account = await newUser(server.api)
    const { email, password, accessToken } = account
    const setup = await server.api.post('/auth/2fa/setup', { token: accessToken })
    expect(setup.status, setup.text).toBe(200)
    expect(setup.headers.get('cache-control')).toBe('no-store')
    const { secret, otpauthUrl } = setup.body.data
    expect(secret).toMatch(/^[A-Z2-7]{32}$/)
    const url = new URL(otpauthUrl)
    expect([url.protocol, url.host]).toEqual(['otpauth:', 'totp'])
    expect(decodeURIComponent(url.pathname)).toBe(`/Catalog and chat service:${email}`)
    expect(Object.fromEntries(url.searchParams)).toEqual({
      secret,
      issuer: 'Catalog and chat service',
      algorithm: 'SHA1',
      digits: '6',
      period: '30',
    })
    const pending = (await stored(account.user.id)).row
    expect(pending?.twoFactorEnabled, 'setup alone turns nothing on').toBe(false)
    expect(pending?.totpSecret).toMatch(/^v1\./)
    expect(pending?.totpSecret).not.toContain(secret)
    expect(box.open(pending?.totpSecret ?? '')).toBe(secret)
    // A pending setup asks nothing of a login yet.
    expect((await login(email, password)).status).toBe(200)

    const start = clock.step
    const enable = await server.api.post('/auth/2fa/enable', {
      json: { code: codeAt(secret, start) },
      token: accessToken,
    })
    expect(enable.status, enable.text).toBe(200)
    const codes: string[] = enable.body.data.recoveryCodes
    expect(codes).toHaveLength(10)
    expect(new Set(codes).size).toBe(10)
    for (const code of codes) expect(code).toMatch(/^[0-9a-z]{5}-[0-9a-z]{5}$/)
    const on = await stored(account.user.id)
    expect(on.row).toMatchObject({ twoFactorEnabled: true, totpLastStep: start })
    expect(on.codes.map((row) => row.codeHash).sort()).toEqual(
      codes.map((code) => createHash('sha256').update(code.replace('-', '')).digest('hex')).sort(),
    )
    const me = await graphql(server.baseUrl, '{ me { twoFactorEnabled } }', {}, accessToken)
    expect(me.body.errors).toBeUndefined()
    expect(typeof me.body.data?.me.twoFactorEnabled).toBe('boolean')

    expectMfaRequired(await login(email, password))
    expectMfaRequired(await login(email, password, wrongCode(secret, start)))
    // The code that enabled two-factor has been spent.
    expectMfaRequired(await login(email, password, codeAt(secret, start)))
    // The password comes first: a wrong one is the usual 401, and spends no code.
    const wrongPassword = await login(email, 'wrong-password', codeAt(secret, start + 1))
    expect([wrongPassword.status, wrongPassword.body.error.code]).toEqual([401, 'UNAUTHENTICATED'])

    clock.toStep(start + 1)
    const current = codeAt(secret, start + 1)
    const loggedIn = await login(email, password, current)
    expect(loggedIn.status, loggedIn.text).toBe(200)
    expect(loggedIn.body.data.accessToken).toEqual(expect.any(String))
    expectMfaRequired(await login(email, password, current))

    clock.toStep(start + 3)
    const previous = codeAt(secret, start + 2)
    expect((await login(email, password, previous)).status, 'one step of drift').toBe(200)
    expectMfaRequired(await login(email, password, previous))
    expectMfaRequired(await login(email, password, codeAt(secret, start + 5)))
    clock.toStep(start + 6)
    expectMfaRequired(await login(email, password, codeAt(secret, start + 4)))
    const ahead = codeAt(secret, start + 7)
    expect((await login(email, password, ahead)).status, 'a clock a step ahead').toBe(200)
    expect((await stored(account.user.id)).row?.totpLastStep).toBe(start + 7)

    const [first, second, third] = codes as [string, string, string]
    expect((await login(email, password, first)).status).toBe(200)
    expectMfaRequired(await login(email, password, first))
    // Typed as people type it: in capitals, without the hyphen.
    expect((await login(email, password, second.replace('-', '').toUpperCase())).status).toBe(200)
    const used = await stored(account.user.id)
    expect(used.codes.filter((row) => row.usedAt !== null)).toHaveLength(2)

    // Disabling takes an unspent code too: the one that last logged in is refused.
    const reused = await server.api.post('/auth/2fa/disable', {
      json: { code: ahead },
      token: accessToken,
    })
    expectMfaRequired(reused)
    expect(await stored(account.user.id)).toEqual(used)
    const disable = await server.api.post('/auth/2fa/disable', {
      json: { code: third },
      token: accessToken,
    })
    expect(disable.status, disable.text).toBe(204)
    const off = await stored(account.user.id)
    expect(off.row).toMatchObject({ twoFactorEnabled: false, totpSecret: null, totpLastStep: null })
    expect(off.codes).toEqual([])
    expect((await login(email, password)).status).toBe(200)
    const after = await graphql(server.baseUrl, '{ me { twoFactorEnabled } }', {}, accessToken)
    expect(after.body.errors).toBeUndefined()
  })

  it('lets one of concurrent logins with the same code in, and one with the same recovery code', async () => {
    const clock = frozenClock()
    const account = await enabled(clock)
    clock.toStep(clock.step + 1)
    const code = codeAt(account.secret, clock.step)
    const attempts = (otp: string) =>
      Promise.all(Array.from({ length: 6 }, () => login(account.email, account.password, otp)))
    for (const otp of [code, account.recoveryCodes[0] as string]) {
      const answers = await attempts(otp)
      const statuses = answers.map((answer) => answer.status).sort()
      expect(statuses).toEqual([200, 401, 401, 401, 401, 401])
      for (const answer of answers.filter((each) => each.status === 401)) expectMfaRequired(answer)
    }
    const { codes, row } = await stored(account.user.id)
    expect(row?.totpLastStep).toBe(clock.step)
    expect(codes.filter((each) => each.usedAt !== null)).toHaveLength(1)
  })

  it('ignores otp for an account without two-factor', async () => {
    const { email, password } = await newUser(server.api)
    expect((await login(email, password, '123456')).status).toBe(200)
  })

  it('replaces a pending secret on a second setup', async () => {
    const clock = frozenClock()
    const account = await setUp()
    const again = await server.api.post('/auth/2fa/setup', { token: account.accessToken })
    expect(again.status, again.text).toBe(200)
    const { secret } = again.body.data
    expect(secret).not.toBe(account.secret)
    expect(box.open((await stored(account.user.id)).row?.totpSecret ?? '')).toBe(secret)
    const before = await stored(account.user.id)
    const stale = await server.api.post('/auth/2fa/enable', {
      json: { code: codeAt(account.secret, clock.step) },
      token: account.accessToken,
    })
    expectMfaRequired(stale)
    expect(await stored(account.user.id)).toEqual(before)
  })

  it('answers 409 and changes nothing when two-factor is not in the state a change needs', async () => {
    const clock = frozenClock()
    const fresh = await newUser(server.api)
    const freshBefore = await stored(fresh.user.id)
    const code = { code: '123456' }
    const enableFirst = await server.api.post('/auth/2fa/enable', {
      json: code,
      token: fresh.accessToken,
    })
    expect([enableFirst.status, enableFirst.body.error.code]).toEqual([409, 'CONFLICT'])
    const disableOff = await server.api.post('/auth/2fa/disable', {
      json: code,
      token: fresh.accessToken,
    })
    expect([disableOff.status, disableOff.body.error.code]).toEqual([409, 'CONFLICT'])
    expect(await stored(fresh.user.id)).toEqual(freshBefore)

    const account = await enabled(clock)
    const before = await stored(account.user.id)
    const setupAgain = await server.api.post('/auth/2fa/setup', { token: account.accessToken })
    expect(setupAgain.status, setupAgain.text).toBe(409)
    clock.toStep(clock.step + 1)
    const enableAgain = await server.api.post('/auth/2fa/enable', {
      json: { code: codeAt(account.secret, clock.step) },
      token: account.accessToken,
    })
    expect(enableAgain.status, enableAgain.text).toBe(409)
    expect(await stored(account.user.id)).toEqual(before)
  })

  describe('refuses bad codes in the envelope, changing nothing', () => {
    const badBodies: [string, unknown][] = [
      ['a code of 5 digits', { code: '12345' }],
      ['a code of 7 digits', { code: '1234567' }],
      ['letters', { code: 'abcdef' }],
      ['a number', { code: 123456 }],
      ['no code', {}],
      ['an unknown field', { code: '123456', remember: true }],
    ]

    it.each(badBodies)('enable with %s: 400', async (_, body) => {
      const account = await setUp()
      const before = await stored(account.user.id)
      const response = await server.api.post('/auth/2fa/enable', {
        json: body,
        token: account.accessToken,
      })
      expectValidationError(response)
      expect(await stored(account.user.id)).toEqual(before)
    })

    it.each(badBodies)('disable with %s: 400', async (_, body) => {
      const account = await enabled(frozenClock())
      const before = await stored(account.user.id)
      const response = await server.api.post('/auth/2fa/disable', {
        json: body,
        token: account.accessToken,
      })
      expectValidationError(response)
      expect(await stored(account.user.id)).toEqual(before)
    })

    it.each([
      ['a code of 5 digits', '12345'],
      ['a code of 7 digits', '1234567'],
      ['letters', 'abcdef'],
      ['a recovery code of 9 characters', 'abcde-fghj'],
    ])('login with %s: 400', async (_, otp) => {
      const account = await enabled(frozenClock())
      const before = await stored(account.user.id)
      expectValidationError(await login(account.email, account.password, otp))
      expect(await stored(account.user.id)).toEqual(before)
    })

    it('enable with a wrong code: 401 MFA_REQUIRED (without a setup: 409, above)', async () => {
      const clock = frozenClock()
      const account = await setUp()
      const before = await stored(account.user.id)
      const wrong = await server.api.post('/auth/2fa/enable', {
        json: { code: wrongCode(account.secret, clock.step) },
        token: account.accessToken,
      })
      expectMfaRequired(wrong)
      expect(await stored(account.user.id)).toEqual(before)
    })
  })
})

describe.each(backends)('two-factor and the login budgets on $name', (backend) => {
  let server: TestServer
  beforeAll(async () => {
    server = await startServer(backend, { RATE_LIMIT_MAX: '100000', AUTH_RATE_LIMIT_MAX: '3' })
  })
  afterAll(() => server?.close())
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it('counts a wrong otp as a failed attempt', async () => {
    const clock = frozenClock()
    const { email, password, accessToken } = await newUser(server.api)
    const setup = await server.api.post('/auth/2fa/setup', { token: accessToken })
    const { secret } = setup.body.data
    const enable = await server.api.post('/auth/2fa/enable', {
      json: { code: codeAt(secret, clock.step) },
      token: accessToken,
    })
    expect(enable.status, enable.text).toBe(200)
    const wrong = { json: { email, password, otp: wrongCode(secret, clock.step) } }
    for (let attempt = 0; attempt < 3; attempt += 1) {
      expectMfaRequired(await server.api.post('/auth/login', wrong))
    }
    clock.toStep(clock.step + 1)
    const right = { json: { email, password, otp: codeAt(secret, clock.step) } }
    const refused = await server.api.post('/auth/login', right)
    expect([refused.status, refused.body.error.code]).toEqual([429, 'RATE_LIMITED'])
  })

  it('counts wrong codes of enable and disable per account, and gives a right one back', async () => {
    const clock = frozenClock()
    // Accounts stored directly: the login budget of this address is spent by the test above.
    const { accessToken } = await freshAccount(server)
    const { secret } = (await server.api.post('/auth/2fa/setup', { token: accessToken })).body.data
    const attempt = (code: string) =>
      server.api.post('/auth/2fa/enable', { json: { code }, token: accessToken })
    for (let count = 0; count < 3; count += 1) {
      expectMfaRequired(await attempt(wrongCode(secret, clock.step)))
    }
    const refused = await attempt(codeAt(secret, clock.step))
    expect([refused.status, refused.body.error.code]).toEqual([429, 'RATE_LIMITED'])
    // Another account's budget is its own.
    const other = await freshAccount(server)
    const setup = await server.api.post('/auth/2fa/setup', { token: other.accessToken })
    const enabled = await server.api.post('/auth/2fa/enable', {
      json: { code: codeAt(setup.body.data.secret, clock.step) },
      token: other.accessToken,
    })
    expect(enabled.status, enabled.text).toBe(200)
    // A success gave its attempt back; disable draws on the same budget.
    const disable = (code: string) =>
      server.api.post('/auth/2fa/disable', { json: { code }, token: other.accessToken })
    clock.toStep(clock.step + 1)
    for (let count = 0; count < 3; count += 1) {
      expectMfaRequired(await disable(wrongCode(setup.body.data.secret, clock.step)))
    }
    const overBudget = await disable(codeAt(setup.body.data.secret, clock.step))
    expect([overBudget.status, overBudget.body.error.code]).toEqual([429, 'RATE_LIMITED'])
  })
})
