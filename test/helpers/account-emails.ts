import { asc, desc, eq } from 'drizzle-orm'
import type { Database } from '../../src/db/database.js'
import { accountTokens, emails, refreshTokens, users } from '../../src/db/schema.js'

/** The links account emails hold, as the test servers have them (the defaults). */
export const LINKS = {
  passwordReset: 'http://127.0.0.1:3000/reset-password',
  emailVerification: 'http://127.0.0.1:3000/verify-email',
}

/** The token of `<link>?token=<token>` in a text, if it holds one. */
export function tokenIn(text: string, link: string): string | undefined {
  const escaped = link.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  return text.match(new RegExp(`${escaped}\\?token=([A-Za-z0-9_-]+)`))?.[1]
}

/** The token of the newest email to `recipient` that links to `link`, read from the outbox. */
export async function emailedToken(db: Database, recipient: string, link: string) {
  const queued = await db
    .select()
    .from(emails)
    .where(eq(emails.recipient, recipient))
    .orderBy(desc(emails.id))
  const token = queued.map((email) => tokenIn(email.text, link)).find(Boolean)
  if (!token) throw new Error(`no email to ${recipient} links to ${link}`)
  return token
}

/**
 * Everything a credential operation may change of an account: its row (password hash,
 * verification), its refresh tokens, its account tokens and the emails to it. A refused
 * request must leave it as it was.
 */
export async function accountState(db: Database, userId: number): Promise<string> {
  const [user] = await db.select().from(users).where(eq(users.id, userId))
  const sessions = await db
    .select()
    .from(refreshTokens)
    .where(eq(refreshTokens.userId, userId))
    .orderBy(asc(refreshTokens.id))
  const tokens = await db
    .select()
    .from(accountTokens)
    .where(eq(accountTokens.userId, userId))
    .orderBy(asc(accountTokens.tokenHash))
  const mail = user
    ? await db
        .select({ id: emails.id })
        .from(emails)
        .where(eq(emails.recipient, user.email))
        .orderBy(asc(emails.id))
    : []
  return JSON.stringify({ user, sessions, tokens, mail })
}
