import { type SQL, sql } from 'drizzle-orm'
import { type Database, rowsOf } from '../../../src/db/client.js'

/** Rows of a raw statement, whichever driver ran it. */
export async function rowsOfStatement<Row>(db: Database, statement: SQL): Promise<Row[]> {
  return rowsOf<Row>(await db.execute(statement))
}

/**
 * One digest of everything a request may store: products, users, messages and the
 * refresh tokens issued. A refused request must leave it as it was. A token's
 * revocation is left out: presenting a retired token is refused and, as documented,
 * revokes its session.
 */
export async function storedState(db: Database): Promise<string> {
  const [row] = await rowsOfStatement<{ digest: string }>(
    db,
    sql`select concat_ws('|',
      (select md5(coalesce(string_agg(p::text, ',' order by p.id), '')) from products p),
      (select md5(coalesce(string_agg(u::text, ',' order by u.id), '')) from users u),
      (select md5(coalesce(string_agg(m::text, ',' order by m.id), '')) from messages m),
      (select count(*) from refresh_tokens)
    ) as digest`,
  )
  return row?.digest ?? ''
}
