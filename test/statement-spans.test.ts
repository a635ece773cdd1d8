import { PGlite } from '@electric-sql/pglite'
import { sql } from 'drizzle-orm'
import { drizzle as pgliteDrizzle } from 'drizzle-orm/pglite'
import { drizzle as postgresDrizzle } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import { afterAll, describe, expect, it } from 'vitest'
import type { Database } from '../src/db/database.js'
import { withPgliteStatementSpans, withStatementSpans } from '../src/db/statement-spans.js'
import { type Backend, backends } from './helpers/backends.js'

/** The spans a driver asked for: each statement's text, and how it ended. */
function recordedSpans() {
  const spans: { text: string; ended?: 'ok' | 'error' }[] = []
  return {
    spans,
    startStatement(text: string) {
      const span: (typeof spans)[number] = { text }
      spans.push(span)
      return (error?: unknown) => {
        span.ended = error === undefined ? 'ok' : 'error'
      }
    },
  }
}

type Traced = { db: Database; close(): Promise<void> }

async function tracedDatabase(backend: Backend, recorder: ReturnType<typeof recordedSpans>) {
  if (backend.name === 'pglite') {
    const client = await PGlite.create('memory://')
    const db = pgliteDrizzle({ client: withPgliteStatementSpans(client, recorder) })
    return { db: db as unknown as Database, close: () => client.close() } satisfies Traced
  }
  const testDatabase = await backend.open()
  const pool = postgres(testDatabase.url as string, { max: 2, onnotice: () => {} })
  const db = postgresDrizzle({ client: withStatementSpans(pool, recorder) })
  return {
    db: db as unknown as Database,
    close: async () => {
      await pool.end()
      await testDatabase.drop()
    },
  } satisfies Traced
}

describe.each(backends)('statement spans on $name', (backend) => {
  const recorder = recordedSpans()
  let traced: Traced
  afterAll(() => traced?.close())

  it('spans every statement, in transactions too, with its text and not its values', async () => {
    traced = await tracedDatabase(backend, recorder)
    const secret = 'a-secret-value'
    await traced.db.execute(sql`select ${secret}::text as given`)
    await traced.db.transaction(async (tx) => {
      await tx.execute(sql`select ${secret}::text as inside`)
    })
    const texts = recorder.spans.map((span) => span.text)
    expect(texts).toContain('select $1::text as given')
    expect(texts).toContain('select $1::text as inside')
    expect(JSON.stringify(recorder.spans)).not.toContain(secret)
    expect(recorder.spans.every((span) => span.ended === 'ok')).toBe(true)
  })

  it('ends the span of a failed statement with its error', async () => {
    await expect(traced.db.execute(sql`select * from no_such_table`)).rejects.toThrow()
    expect(recorder.spans.at(-1)).toEqual({ text: 'select * from no_such_table', ended: 'error' })
  })
})
