import { eq } from 'drizzle-orm'
import { Secret, TOTP } from 'otpauth'
import { expect } from 'vitest'
import type { Database } from '../../../src/db/database.js'
import { recoveryCodes, users } from '../../../src/db/schema.js'
import type { OperationId } from '../../../src/http/operations.js'
import { createSecretBox } from '../../../src/platform/secret-box.js'
import { testEnvironment } from '../server.js'
import type { Expectation, ValidExchange } from './rest-expectations.js'
import { accountOf } from './world.js'

/** The box the fuzz servers seal TOTP secrets with: keyed from their JWT_SECRET. */
export const totpBox = createSecretBox(testEnvironment.JWT_SECRET, 'totp-secret')

const callerRow = ({ before, world, caller }: ValidExchange) => {
  const row = before.users.get(accountOf(world, caller).id)
  if (!row) throw new Error('the caller has no account')
  return row
}

/** Whether `code` is a code of the sealed secret near now (a guess that happens to be right). */
function fitsSecret(sealed: string, code: string) {
  const totp = new TOTP({ secret: Secret.fromBase32(totpBox.open(sealed)) })
  return totp.validate({ token: code, window: 2 }) !== null
}

async function storedTwoFactor(db: Database, userId: number) {
  const [row] = await db.select().from(users).where(eq(users.id, userId))
  const codes = await db.$count(recoveryCodes, eq(recoveryCodes.userId, userId))
  return { enabled: row?.twoFactorEnabled, sealed: row?.totpSecret, codes }
}

/**
 * What the two-factor operations answer. A generated code is almost never right, so
 * enable and disable are mostly refused (401); should a guess be right, the account
 * is turned back off with a recovery code, so the world's logins go on needing none.
 */
export const twoFactorExpectations = {
  async setupTwoFactor(exchange) {
    const { response, world } = exchange
    const row = callerRow(exchange)
    if (row.twoFactorEnabled) return expect(response.status, response.text).toBe(409)
    expect(response.status, response.text).toBe(200)
    const { secret, otpauthUrl } = response.body.data
    expect(new URL(otpauthUrl).searchParams.get('secret')).toBe(secret)
    const stored = await storedTwoFactor(world.db, row.id)
    expect(stored.enabled, 'setup alone turns nothing on').toBe(false)
    expect(stored.sealed, 'the secret stored in the clear').not.toContain(secret)
    expect(totpBox.open(stored.sealed ?? '')).toBe(secret)
  },

  async enableTwoFactor(exchange) {
    const { response, world, inputs } = exchange
    const row = callerRow(exchange)
    const { code } = inputs.body as { code: string }
    if (row.twoFactorEnabled || !row.totpSecret) {
      return expect(response.status, response.text).toBe(409)
    }
    if (response.status === 401) return expect(response.body.error.code).toBe('MFA_REQUIRED')
    expect(response.status, response.text).toBe(200)
    expect(fitsSecret(row.totpSecret, code), 'enabled with a wrong code').toBe(true)
    const [recovery] = response.body.data.recoveryCodes
    const off = await world.server.api.post('/auth/2fa/disable', {
      json: { code: recovery },
      token: world.tokens[exchange.caller as 'user' | 'admin'],
    })
    expect(off.status, off.text).toBe(204)
  },

  async disableTwoFactor(exchange) {
    const { response, world } = exchange
    const row = callerRow(exchange)
    if (!row.twoFactorEnabled) return expect(response.status, response.text).toBe(409)
    if (response.status === 401) return expect(response.body.error.code).toBe('MFA_REQUIRED')
    expect(response.status, response.text).toBe(204)
    expect(await storedTwoFactor(world.db, row.id)).toEqual({
      enabled: false,
      sealed: null,
      codes: 0,
    })
  },
} satisfies Partial<Record<OperationId, Expectation>>

/** Every stored TOTP secret is sealed (opens with the box), and none is on without one. */
export async function twoFactorProblems(db: Database): Promise<string[]> {
  const rows = await db.select().from(users)
  return rows.flatMap(({ id, twoFactorEnabled, totpSecret }) => {
    if (totpSecret === null)
      return twoFactorEnabled ? [`user ${id}: two-factor without a secret`] : []
    try {
      totpBox.open(totpSecret)
      return []
    } catch {
      return [`user ${id}: a TOTP secret that is not sealed`]
    }
  })
}
