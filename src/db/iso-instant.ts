import { type SQLWrapper, sql } from 'drizzle-orm'

/**
 * An instant as text in the form JavaScript's toISOString writes (UTC, milliseconds, Z),
 * written by Postgres, so a row goes out as read, with no Date made and formatted per
 * value. to_char, not ::text: the text of a timestamptz follows the session's DateStyle
 * and TimeZone.
 */
export const isoInstant = (instant: SQLWrapper) =>
  sql<string>`to_char(${instant} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/** A table's row (`$inferSelect`) as isoInstant writes it: each instant as that text. */
export type WithIsoInstants<Row> = { [Column in keyof Row]: IsoText<Row[Column]> }
type IsoText<Value> = Value extends Date ? string : Value
