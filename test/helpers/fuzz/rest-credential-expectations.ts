import { createHash } from 'node:crypto'
import { and, desc, eq } from 'drizzle-orm'
import { expect } from 'vitest'
import { loadConfig } from '../../../src/config.js'
import { accountTokens, emails } from '../../../src/db/schema.js'
import type { OperationId } from '../../../src/http/operations.js'
import { testEnvironment } from '../server.js'
import type { Expectation, ValidExchange } from './rest-expectations.js'

/** The fuzz servers' links: the defaults, as they set none. */
const { passwordReset } = loadConfig(testEnvironment).accountEmails

/** A refusal in the envelope with this code. */
function expectRefused({ response }: ValidExchange, status: number, code: string) {
  expect(response.status, response.text).toBe(status)
  expect(response.body.error.code).toBe(code)
}

/**
 * What the credential operations answer. The generated passwords and tokens are random,
 * so none is the account's or an issued one: a change of password is refused (a right
 * current password would end the world's sessions), and so is every token. The suites
 * password-change, password-reset and email-verification hold the successes.
 */
export const credentialExpectations = {
  changePassword: (exchange) => expectRefused(exchange, 401, 'UNAUTHENTICATED'),
  confirmPasswordReset: (exchange) => expectRefused(exchange, 400, 'BAD_REQUEST'),
  verifyEmail: (exchange) => expectRefused(exchange, 400, 'BAD_REQUEST'),

  async requestPasswordReset({ response, inputs, world }) {
    expect(response.status, response.text).toBe(202)
    expect(response.body).toEqual({ data: { status: 'accepted' } })
    const { email } = inputs.body as { email: string }
    const account = Object.values(world.accounts).find(
      (each) => each.email.toLowerCase() === email.toLowerCase(),
    )
    if (!account) return
    // The account's newest email holds a link whose token is stored, hashed, for a reset.
    const [newest] = await world.db
      .select()
      .from(emails)
      .where(eq(emails.recipient, account.email))
      .orderBy(desc(emails.id))
      .limit(1)
    const token = newest?.text.match(/\?token=([\w-]+)/)?.[1] ?? ''
    expect(newest?.text).toContain(`${passwordReset.url}?token=${token}`)
    const tokenHash = createHash('sha256').update(token).digest('hex')
    const stored = await world.db
      .select()
      .from(accountTokens)
      .where(and(eq(accountTokens.tokenHash, tokenHash), eq(accountTokens.userId, account.id)))
    expect(stored).toMatchObject([{ purpose: 'password-reset', usedAt: null }])
  },

  /** Every session of the caller has ended: its token is refused from now on. */
  async logoutAll({ response, caller, world }) {
    expect(response.status, response.text).toBe(204)
    if (caller !== 'user' && caller !== 'admin') return
    const ended = await world.server.api.get('/orders', { token: world.tokens[caller] })
    expect(ended.status, ended.text).toBe(401)
  },
} satisfies Partial<Record<OperationId, Expectation>>
