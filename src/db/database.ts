import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import type { ReadReplica } from './read-replica.js'
import type * as schema from './schema.js'

/** The database as repositories and services see it: drizzle over the schema, either driver. */
export type Database = PgDatabase<PgQueryResultHKT, typeof schema>
export type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0]
/** What repository methods run on: the database, or a transaction a service opened. */
export type Executor = Database | Transaction

/** An open database, as the composition root receives it from openDatabase (client.ts). */
export interface DatabaseHandle {
  readonly kind: 'pglite' | 'postgres'
  readonly db: Database
  /** DATABASE_REPLICA_URL's replica, on Postgres when it is set: never migrated, never written. */
  readonly replica?: ReadReplica
  /** Applies pending migrations (on the primary); safe when several instances start at once. */
  migrate(): Promise<void>
  ping(): Promise<void>
  close(): Promise<void>
}
