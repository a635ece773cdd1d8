import { eq } from 'drizzle-orm'
import { createSigner, createVerifier } from 'fast-jwt'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { users } from '../src/db/schema.js'
import { bearerTokenOf, createAccessTokens } from '../src/platform/infrastructure/access-tokens.js'
import type { ApiResponse } from './helpers/api.js'
import { backends } from './helpers/backends.js'
import {
  ADMIN,
  login,
  newUser,
  startServer,
  type TestServer,
  testEnvironment,
} from './helpers/server.js'

const product = { name: 'Desk lamp', price: 19.99, category: 'lighting', stock: 5 }

let emailCount = 0
/** An address no other test of this file uses. */
const uniqueEmail = () => {
  emailCount += 1
  return `signup${emailCount}-${Date.now()}@example.com`
}

const adminClaims = { sub: '1', role: 'admin' }
const signedWith = (key: string, options: { clockTimestamp?: number; expiresIn?: number } = {}) =>
  createSigner({ key, algorithm: 'HS256', expiresIn: 60_000, ...options })(adminClaims)

/** Signed with the service's own secret, with exactly these claims (no expiry added). */
const signedWithoutDefaults = (claims: object) =>
  createSigner({ key: testEnvironment.JWT_SECRET, algorithm: 'HS256', noTimestamp: true })(claims)
const inAMinute = () => Math.floor(Date.now() / 1000) + 60
const inAnHour = () => Math.floor(Date.now() / 1000) + 3600
const A_CENTURY_MS = 100 * 365 * 24 * 3_600_000

/** Bearer tokens that must never pass, each for one reason. */
const badTokens: [string, Record<string, string>][] = [
  ['no Authorization header', {}],
  ['a garbage token', { authorization: 'Bearer not-a-jwt' }],
  [
    'a token signed with another secret',
    { authorization: `Bearer ${signedWith('another-secret-that-is-also-long-enough-for-hs256')}` },
  ],
  [
    'an expired token',
    {
      authorization: `Bearer ${signedWith(testEnvironment.JWT_SECRET, { clockTimestamp: Date.now() - 3_600_000 })}`,
    },
  ],
  [
    'a token signed with the secret that lives a century, past ACCESS_TOKEN_TTL',
    {
      authorization: `Bearer ${signedWith(testEnvironment.JWT_SECRET, { expiresIn: A_CENTURY_MS })}`,
    },
  ],
  [
    'an unsigned token (alg none)',
    { authorization: `Bearer ${createSigner({ algorithm: 'none' })(adminClaims)}` },
  ],
  [
    'a token with an unknown role',
    {
      authorization: `Bearer ${createSigner({ key: testEnvironment.JWT_SECRET, algorithm: 'HS256' })({ sub: '1', role: 'root' })}`,
    },
  ],
  ...(
    [
      ['without an expiry', { sub: '1', role: 'admin' }],
      ['without an issue time', { sub: '1', role: 'admin', exp: inAMinute() }],
      [
        'issued an hour from now',
        { sub: '1', role: 'admin', iat: inAnHour(), exp: inAnHour() + 60 },
      ],
      ['whose subject is hex', { sub: '0x1', role: 'admin', exp: inAMinute() }],
      ['whose subject has a fraction', { sub: '1.0', role: 'admin', exp: inAMinute() }],
      ['whose subject is padded', { sub: ' 1', role: 'admin', exp: inAMinute() }],
      ['whose subject is a JSON number', { sub: 1, role: 'admin', exp: inAMinute() }],
      ['without a subject', { role: 'admin', exp: inAMinute() }],
    ] as const
  ).map(([why, claims]): [string, Record<string, string>] => [
    `a token ${why}`,
    { authorization: `Bearer ${signedWithoutDefaults(claims)}` },
  ]),
  ['a Basic Authorization header', { authorization: 'Basic xyz' }],
  ['a Bearer scheme without a token', { authorization: 'Bearer' }],
]

const expectUnauthenticated = (response: ApiResponse) => {
  expect(response.status, response.text).toBe(401)
  expect(response.body.error.code).toBe('UNAUTHENTICATED')
}

describe.each(backends)('auth on $name', (backend) => {
  let server: TestServer
  let adminToken: string
  const api = () => server.api
  const signUp = (body: object) => api().post('/users', { json: body })
  const validUser = () => ({
    name: 'Ada Lovelace',
    email: uniqueEmail(),
    password: 'correct-horse-1',
  })
  /** POST /auth/login with only the credentials of the given account. */
  const logIn = ({ email, password }: { email: string; password: string }) =>
    api().post('/auth/login', { json: { email, password } })
  const refresh = (refreshToken: string) => api().post('/auth/refresh', { json: { refreshToken } })
  const productCount = async () =>
    (await api().get('/products?limit=1')).body.pagination.total as number
  const storedUsers = () => server.testDatabase.database.db.$count(users)

  beforeAll(async () => {
    server = await startServer(backend)
    adminToken = (await login(server.api, ADMIN)).accessToken
  })
  afterAll(() => server?.close())

  describe('sign-up', () => {
    it('creates a user with the user role, answers 201 with it and its location', async () => {
      const body = { ...validUser(), age: 36 }
      const response = await signUp(body)
      expect(response.status, response.text).toBe(201)
      const user = response.body.data
      expect(user).toMatchObject({ name: body.name, email: body.email, age: 36, role: 'user' })
      expect(Number.isInteger(user.id)).toBe(true)
      expect(new Date(user.createdAt).toISOString()).toBe(user.createdAt)
      expect(response.headers.get('location')).toBe(`/users/${user.id}`)
      expect((await logIn(body)).status).toBe(200)
    })

    it('never answers the password or its hash', async () => {
      const body = validUser()
      const response = await signUp(body)
      expect(response.status, response.text).toBe(201)
      expect(Object.keys(response.body.data).sort()).toEqual(
        [
          'age',
          'createdAt',
          'email',
          'emailVerified',
          'id',
          'name',
          'phoneNumber',
          'role',
          'twoFactorEnabled',
        ].sort(),
      )
      expect(response.text).not.toContain(body.password)
      expect(response.text).not.toMatch(/scrypt|password|hash/i)
    })

    it('stores no age as null', async () => {
      const response = await signUp(validUser())
      expect(response.status, response.text).toBe(201)
      expect(response.body.data.age).toBeNull()
    })

    it.each([
      ['name of 1 character', { name: 'a' }],
      ['name of 100 characters', { name: 'n'.repeat(100) }],
      ['password of 8 characters', { password: 'p'.repeat(8) }],
      ['password of 128 characters', { password: 'p'.repeat(128) }],
      ['age of 0', { age: 0 }],
      ['age of 150', { age: 150 }],
      ['email of 254 characters', { email: `${'e'.repeat(242)}@example.com` }],
    ])('accepts a %s', async (_, change: Record<string, unknown>) => {
      const body = { ...validUser(), ...change }
      const response = await signUp(body)
      expect(response.status, response.text).toBe(201)
      const { password, ...visible } = change
      expect(response.body.data).toMatchObject({ ...visible, role: 'user' })
      // The stored password is the one given, whatever its length.
      expect((await logIn(body)).status).toBe(200)
    })

    it.each([
      ['empty name', { name: '' }, 'name'],
      ['name of 101 characters', { name: 'n'.repeat(101) }, 'name'],
      ['name that is not a string', { name: 42 }, 'name'],
      ['password of 7 characters', { password: 'p'.repeat(7) }, 'password'],
      ['password of 129 characters', { password: 'p'.repeat(129) }, 'password'],
      ['age of -1', { age: -1 }, 'age'],
      ['age of 151', { age: 151 }, 'age'],
      ['age of 1.5', { age: 1.5 }, 'age'],
      ['age as a string', { age: '30' }, 'age'],
      ['age of null', { age: null }, 'age'],
      ['email without @', { email: 'not-an-email' }, 'email'],
      ['email without a local part', { email: '@example.com' }, 'email'],
      ['email of 255 characters', { email: `${'e'.repeat(243)}@example.com` }, 'email'],
      ['role field', { role: 'admin' }, 'role'],
      ['id field', { id: 1 }, 'id'],
    ])('rejects a %s with VALIDATION_ERROR and stores nothing', async (_, change, field) => {
      const before = await storedUsers()
      const response = await signUp({ ...validUser(), ...change })
      expect(response.status, response.text).toBe(400)
      expect(response.body.error.code).toBe('VALIDATION_ERROR')
      expect(Object.keys(response.body.error.details)).toEqual([field])
      expect(await storedUsers()).toBe(before)
    })

    it('stores nothing when asked for the admin role: no login, and the email stays free', async () => {
      const body = validUser()
      const rejected = await signUp({ ...body, role: 'admin' })
      expect(rejected.status, rejected.text).toBe(400)
      expect(rejected.body.error).toMatchObject({
        code: 'VALIDATION_ERROR',
        details: { role: [expect.any(String)] },
      })
      expectUnauthenticated(await logIn(body))
      const created = await signUp(body)
      expect(created.status, created.text).toBe(201)
      expect(created.body.data.role).toBe('user')
    })

    it('reports every failing field at once, and the missing ones', async () => {
      const response = await signUp({ name: '', age: -1 })
      expect(response.status).toBe(400)
      expect(response.body.error.details).toEqual({
        name: [expect.any(String)],
        age: [expect.any(String)],
        email: ['is required'],
        password: ['is required'],
      })
    })

    it('answers 409 CONFLICT for a taken email, also when it differs only in case', async () => {
      emailCount += 1
      const email = `Case.Test${emailCount}-${Date.now()}@Example.com`
      const first = { name: 'First', email, password: 'first-password' }
      expect((await signUp(first)).status).toBe(201)
      for (const taken of [email, email.toLowerCase(), email.toUpperCase()]) {
        const response = await signUp({ name: 'Second', email: taken, password: 'second-password' })
        expect(response.status, taken).toBe(409)
        expect(response.body.error.code).toBe('CONFLICT')
      }
      // The first account is untouched by the attempts.
      expect((await logIn(first)).status).toBe(200)
      expectUnauthenticated(await logIn({ email, password: 'second-password' }))
    })
  })

  describe('login', () => {
    it('answers a Bearer token pair whose access token names the user and role', async () => {
      const body = validUser()
      const user = (await signUp(body)).body.data
      const response = await logIn(body)
      expect(response.status, response.text).toBe(200)
      const pair = response.body.data
      expect(pair).toMatchObject({ tokenType: 'Bearer', expiresIn: 900 })
      expect(pair.refreshToken).toEqual(expect.any(String))
      expect(pair.refreshToken).not.toBe('')
      expect(response.headers.get('cache-control')).toBe('no-store')
      const claims = createVerifier({ key: testEnvironment.JWT_SECRET })(pair.accessToken)
      expect(claims).toMatchObject({ sub: String(user.id), role: 'user' })
      expect(claims.exp - claims.iat).toBe(pair.expiresIn)
    })

    it('starts a new session each time', async () => {
      const body = validUser()
      await signUp(body)
      const first = await login(api(), { email: body.email, password: body.password })
      const second = await login(api(), { email: body.email, password: body.password })
      expect(second.refreshToken).not.toBe(first.refreshToken)
    })

    it('accepts the email in a different case', async () => {
      const body = validUser()
      await signUp(body)
      for (const email of [body.email.toUpperCase(), `S${body.email.slice(1)}`]) {
        const response = await logIn({ ...body, email })
        expect(response.status, email).toBe(200)
      }
    })

    it('answers 401 with one message for a wrong password and for an unknown email', async () => {
      const body = validUser()
      await signUp(body)
      const wrongPassword = await api().post('/auth/login', {
        json: { email: body.email, password: 'wrong-password' },
      })
      const unknownEmail = await api().post('/auth/login', {
        json: { email: uniqueEmail(), password: body.password },
      })
      expectUnauthenticated(wrongPassword)
      expectUnauthenticated(unknownEmail)
      expect(unknownEmail.body.error.message).toBe(wrongPassword.body.error.message)
    })
  })

  describe('refresh', () => {
    it('rotates: a new pair, another refresh token, and an access token that works', async () => {
      const session = await login(api(), ADMIN)
      const response = await refresh(session.refreshToken)
      expect(response.status, response.text).toBe(200)
      const pair = response.body.data
      expect(pair).toMatchObject({ tokenType: 'Bearer', expiresIn: 900 })
      expect(pair.refreshToken).not.toBe(session.refreshToken)
      expect(response.headers.get('cache-control')).toBe('no-store')
      const created = await api().post('/products', { json: product, token: pair.accessToken })
      expect(created.status, created.text).toBe(201)
      // And the new refresh token rotates in turn.
      expect((await refresh(pair.refreshToken)).status).toBe(200)
    })

    it('revokes the whole session when a rotated refresh token is reused', async () => {
      const { refreshToken: old } = await newUser(api())
      const rotated = await refresh(old)
      expect(rotated.status, rotated.text).toBe(200)
      expectUnauthenticated(await refresh(old))
      expectUnauthenticated(await refresh(rotated.body.data.refreshToken))
    })

    it('leaves the other sessions of the user alive when one is revoked', async () => {
      const first = await newUser(api())
      const second = await login(api(), { email: first.email, password: first.password })
      const rotated = await refresh(first.refreshToken)
      expect(rotated.status).toBe(200)
      expectUnauthenticated(await refresh(first.refreshToken))
      expectUnauthenticated(await refresh(rotated.body.data.refreshToken))
      expect((await refresh(second.refreshToken)).status).toBe(200)
    })

    it.each([
      ['garbage', 'not-a-refresh-token'],
      ['a JWT', 'eyJhbGciOiJIUzI1NiJ9.e30.c2lnbmF0dXJl'],
    ])('answers 401 for %s', async (_, refreshToken) => {
      expectUnauthenticated(await refresh(refreshToken))
    })
  })

  describe('logout', () => {
    it('answers 204 with no body and retires the refresh token', async () => {
      const session = await newUser(api())
      const response = await api().post('/auth/logout', {
        json: { refreshToken: session.refreshToken },
        token: session.accessToken,
      })
      expect(response.status, response.text).toBe(204)
      expect(response.text).toBe('')
      expectUnauthenticated(await refresh(session.refreshToken))
    })

    it('ends the session of a rotated refresh token, and only that session', async () => {
      const session = await newUser(api())
      const other = await login(api(), { email: session.email, password: session.password })
      const rotated = (await refresh(session.refreshToken)).body.data
      const response = await api().post('/auth/logout', {
        json: { refreshToken: rotated.refreshToken },
        token: rotated.accessToken,
      })
      expect(response.status, response.text).toBe(204)
      expectUnauthenticated(await refresh(rotated.refreshToken))
      expect((await refresh(other.refreshToken)).status).toBe(200)
    })

    it('needs a bearer token, and without one leaves the session alive', async () => {
      const session = await newUser(api())
      expectUnauthenticated(
        await api().post('/auth/logout', { json: { refreshToken: session.refreshToken } }),
      )
      expect((await refresh(session.refreshToken)).status).toBe(200)
    })

    it("answers 401 for another user's refresh token and leaves that session alive", async () => {
      const caller = await newUser(api())
      const victim = await newUser(api())
      expectUnauthenticated(
        await api().post('/auth/logout', {
          json: { refreshToken: victim.refreshToken },
          token: caller.accessToken,
        }),
      )
      expect((await refresh(victim.refreshToken)).status).toBe(200)
      // The caller's own session is untouched too.
      expect((await refresh(caller.refreshToken)).status).toBe(200)
    })

    it('answers 401 for an unknown refresh token', async () => {
      const session = await newUser(api())
      expectUnauthenticated(
        await api().post('/auth/logout', {
          json: { refreshToken: 'not-a-refresh-token' },
          token: session.accessToken,
        }),
      )
    })
  })

  describe('roles and access tokens', () => {
    it('forbids POST /products to a user token with 403 and creates nothing', async () => {
      const { accessToken } = await newUser(api())
      const before = await productCount()
      const response = await api().post('/products', { json: product, token: accessToken })
      expect(response.status, response.text).toBe(403)
      expect(response.body.error.code).toBe('FORBIDDEN')
      expect(await productCount()).toBe(before)
    })

    it('lets an admin token create a product', async () => {
      const before = await productCount()
      const response = await api().post('/products', { json: product, token: adminToken })
      expect(response.status, response.text).toBe(201)
      expect(await productCount()).toBe(before + 1)
    })

    it('accepts an unexpired admin token signed with the secret (the control for the next)', async () => {
      const token = signedWith(testEnvironment.JWT_SECRET)
      expect((await api().post('/products', { json: product, token })).status).toBe(201)
    })

    it.each(badTokens)(
      'answers 401 UNAUTHENTICATED to %s and creates nothing',
      async (_, headers) => {
        const before = await productCount()
        expectUnauthenticated(await api().post('/products', { json: product, headers }))
        expect(await productCount()).toBe(before)
      },
    )

    it.each(badTokens)('answers 401 UNAUTHENTICATED to %s on logout', async (_, headers) => {
      const session = await newUser(api())
      expectUnauthenticated(
        await api().post('/auth/logout', { json: { refreshToken: session.refreshToken }, headers }),
      )
    })
  })

  describe('admin bootstrap', () => {
    const admins = (target: TestServer) =>
      target.testDatabase.database.db
        .select({ email: users.email, role: users.role })
        .from(users)
        .where(eq(users.role, 'admin'))

    it('makes the configured ADMIN the only admin, whose token creates products', async () => {
      const { accessToken } = await login(api(), ADMIN)
      const response = await api().post('/products', { json: product, token: accessToken })
      expect(response.status, response.text).toBe(201)
      expect(await admins(server)).toEqual([{ email: ADMIN.email, role: 'admin' }])
    })

    it('creates admin@localhost with a password logged once, which logs in as admin', async () => {
      const logLines: string[] = []
      const logger = { level: 'warn', stream: { write: (line: string) => logLines.push(line) } }
      const bare = await startServer(backend, { ADMIN_EMAIL: '', ADMIN_PASSWORD: '' }, { logger })
      try {
        expect(await admins(bare)).toEqual([{ email: 'admin@localhost', role: 'admin' }])
        expectUnauthenticated(await bare.api.post('/auth/login', { json: ADMIN }))
        const printed = logLines.map((line) => JSON.parse(line)).filter((entry) => entry.password)
        expect(printed).toHaveLength(1)
        const { email, password } = printed[0]
        const { accessToken } = await login(bare.api, { email, password })
        const response = await bare.api.post('/products', { json: product, token: accessToken })
        expect(response.status, response.text).toBe(201)
      } finally {
        await bare.close()
      }
    })
  })
})

describe('the bearer token of an Authorization header', () => {
  it.each(['Bearer abc.def', 'bearer abc.def', 'BEARER abc.def'])('is read from %j', (header) => {
    expect(bearerTokenOf(header)).toBe('abc.def')
  })

  it.each([
    undefined,
    '',
    'Bearer',
    'Bearer ',
    'Bearer  abc',
    'Bearer abc def',
    ' Bearer abc',
    'Basic abc',
    'Bearerabc',
  ])('is not read from %j', (header) => {
    expect(bearerTokenOf(header)).toBeUndefined()
  })
})

describe('the cache of verified access tokens', () => {
  const tokens = createAccessTokens({ secret: testEnvironment.JWT_SECRET, ttlSeconds: 60 })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('refuses a token it verified once, after the token expires', () => {
    vi.useFakeTimers({ now: Date.now() })
    const token = tokens.sign({ userId: 7, role: 'user', sessionVersion: 2 })
    expect(tokens.verify(token)).toMatchObject({ userId: 7, role: 'user', sessionVersion: 2 })
    vi.advanceTimersByTime(61_000)
    expect(() => tokens.verify(token)).toThrow(/invalid or expired/)
  })

  it('is created without a process warning', () => {
    const warnings = vi.spyOn(process, 'emitWarning')
    try {
      createAccessTokens({ secret: testEnvironment.JWT_SECRET, ttlSeconds: 60 })
      expect(warnings).not.toHaveBeenCalled()
    } finally {
      warnings.mockRestore()
    }
  })

  it('answers each token with its own caller when more tokens pass than it keeps', () => {
    const signed = Array.from({ length: 1500 }, (_, index) =>
      tokens.sign({ userId: index + 1, role: index % 2 ? 'admin' : 'user', sessionVersion: index }),
    )
    for (const token of signed) tokens.verify(token)
    for (const [index, token] of signed.entries()) {
      expect(tokens.verify(token)).toMatchObject({
        userId: index + 1,
        role: index % 2 ? 'admin' : 'user',
        sessionVersion: index,
      })
    }
  })

  it('refuses a token one character away from one it verified', () => {
    const token = tokens.sign({ userId: 7, role: 'admin', sessionVersion: 0 })
    expect(tokens.verify(token).role).toBe('admin')
    const at = token.length - 10 // inside the signature, clear of base64's padding bits
    const other = token[at] === 'A' ? 'B' : 'A'
    const forged = `${token.slice(0, at)}${other}${token.slice(at + 1)}`
    expect(() => tokens.verify(forged)).toThrow(/invalid or expired/)
  })
})
