import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ApiResponse } from './helpers/api.js'
import { backends } from './helpers/backends.js'
import { redisUrl } from './helpers/redis.js'
import { startServer, type TestServer } from './helpers/server.js'

/**
 * Failed logins are budgeted per address and per account, and only failures count; a
 * client that logged in to the account before presents its device token and is
 * budgeted per device, so strangers who spend the account's budget do not lock its
 * owner out (DESIGN §13, OWASP's device cookies). Addresses are varied with
 * X-Forwarded-For, which the server believes from the loopback here.
 */

const BUDGET = 30
const PASSWORD = 'the-owners-password'
const stores = [
  ...backends.map((backend) => ({ name: `${backend.name}, in process`, backend, redis: {} })),
  ...(redisUrl
    ? [
        {
          name: `${backends[0]?.name}, in Redis`,
          backend: backends[0],
          redis: { REDIS_URL: redisUrl },
        },
      ]
    : []),
]

let addressCount = 0
/** An address no other attempt of this file comes from. */
const freshAddress = () => {
  addressCount += 1
  return `10.${(addressCount >> 16) & 255}.${(addressCount >> 8) & 255}.${addressCount & 255}`
}

const expectRateLimited = (response: ApiResponse) => {
  expect(response.status, response.text).toBe(429)
  expect(response.body.error.code).toBe('RATE_LIMITED')
  expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0)
}

describe.each(stores)('login budgets on $name', ({ backend, redis }) => {
  let server: TestServer
  let accountCount = 0

  interface Attempt {
    from?: string
    deviceToken?: unknown
  }
  const logIn = (
    email: string,
    password: string,
    { from = freshAddress(), deviceToken }: Attempt = {},
  ) =>
    server.api.post('/auth/login', {
      json: { email, password, ...(deviceToken !== undefined && { deviceToken }) },
      headers: { 'x-forwarded-for': from },
    })
  /** A new account, and the device token of its owner's first login. */
  async function ownedAccount() {
    accountCount += 1
    const email = `owner${accountCount}-${Date.now()}@example.com`
    const created = await server.api.post('/users', {
      json: { name: 'Owner', email, password: PASSWORD },
      headers: { 'x-forwarded-for': freshAddress() },
    })
    expect(created.status, created.text).toBe(201)
    const first = await logIn(email, PASSWORD)
    expect(first.status, first.text).toBe(200)
    return { email, deviceToken: first.body.data.deviceToken as string }
  }
  /** The account's budget spent by strangers: BUDGET wrong passwords, each from another address. */
  async function spendAccountBudget(email: string) {
    for (let attempt = 0; attempt < BUDGET; attempt += 1) {
      expect((await logIn(email, `wrong-password-${attempt}`)).status).toBe(401)
    }
    expectRateLimited(await logIn(email, 'wrong-password-again'))
  }

  beforeAll(async () => {
    server = await startServer(backend as (typeof backends)[number], {
      ...redis,
      RATE_LIMIT_MAX: '100000',
      AUTH_RATE_LIMIT_MAX: String(BUDGET),
      TRUST_PROXY: 'loopback',
    })
  })
  afterAll(() => server?.close())

  it('answers a device token beside the token pair', async () => {
    const { deviceToken } = await ownedAccount()
    expect(deviceToken).toEqual(expect.any(String))
    expect(deviceToken.length).toBeGreaterThan(20)
  })

  it("lets the owner's device in after 30 failures from 30 addresses, and refuses a new client", async () => {
    const { email, deviceToken } = await ownedAccount()
    await spendAccountBudget(email)
    const owner = await logIn(email, PASSWORD, { deviceToken })
    expect(owner.status, owner.text).toBe(200)
    expect(owner.body.data).toMatchObject({ tokenType: 'Bearer', deviceToken: expect.any(String) })
    // The right password from a client without a device token is refused all the same.
    expectRateLimited(await logIn(email, PASSWORD))
  })

  it.each([
    ['a device token of another account', async () => (await ownedAccount()).deviceToken],
    ['a forged device token', async () => 'bm9uY2U.9999999999.c2lnbmF0dXJl'],
    ['a device token that is not a string', async () => 12345],
  ])('gives %s no exemption', async (_, tokenOf) => {
    const { email } = await ownedAccount()
    const deviceToken = await tokenOf()
    await spendAccountBudget(email)
    expectRateLimited(await logIn(email, PASSWORD, { deviceToken }))
  })

  it("bounds a device's own failures, without spending the account's budget", async () => {
    const { email, deviceToken } = await ownedAccount()
    const from = freshAddress()
    for (let attempt = 0; attempt < BUDGET; attempt += 1) {
      expect((await logIn(email, 'wrong-password', { from, deviceToken })).status).toBe(401)
    }
    expectRateLimited(await logIn(email, PASSWORD, { from, deviceToken }))
    // Neither the account's budget nor the address's was drawn on.
    expect((await logIn(email, PASSWORD, { from })).status).toBe(200)
  })

  it('counts no successful login, per address or per account', async () => {
    const { email } = await ownedAccount()
    const from = freshAddress()
    for (let attempt = 0; attempt < BUDGET + 10; attempt += 1) {
      expect((await logIn(email, PASSWORD, { from })).status).toBe(200)
    }
    for (let attempt = 0; attempt < BUDGET - 1; attempt += 1) {
      expect((await logIn(email, 'wrong-password', { from })).status).toBe(401)
    }
    expect((await logIn(email, PASSWORD, { from })).status).toBe(200)
  })

  it('never lets concurrent failures overdraw the budget', async () => {
    const { email } = await ownedAccount()
    const answers = await Promise.all(
      Array.from({ length: BUDGET + 10 }, () => logIn(email, 'wrong-password')),
    )
    const statuses = answers.map((answer) => answer.status)
    expect(statuses.filter((status) => status === 401)).toHaveLength(BUDGET)
    expect(statuses.filter((status) => status === 429)).toHaveLength(10)
  })
})
