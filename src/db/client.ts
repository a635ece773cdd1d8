import type { Logger } from 'drizzle-orm'
import type { ReplicaTarget } from '../config.js'
import type { DatabaseHandle } from './database.js'
import type { StatementSpans } from './statement-spans.js'

export interface DatabaseSettings {
  /** A postgres:// URL; without it the embedded PGlite is used. */
  databaseUrl?: string | undefined
  /** PGlite's directory, or `memory://` for a database that lives only in this process. */
  dataDir: string
  /** Statement timeout and the wait for an answer, on Postgres (see Config). */
  databaseTimeoutMs: number
  /** A streaming replica of `databaseUrl` for the reads that may go to one (see Config). */
  replica?: ReplicaTarget | undefined
  /** Told of every statement drizzle sends (tests count them). */
  logger?: Logger | undefined
  /** A span around every statement, when tracing is on. */
  statementSpans?: StatementSpans | undefined
}

/**
 * The service's database: Postgres when given a URL, else the embedded PGlite. Each
 * driver is loaded only when chosen, so a process on one never loads the other.
 */
export async function openDatabase(settings: DatabaseSettings): Promise<DatabaseHandle> {
  if (settings.databaseUrl) {
    const { openPostgres } = await import('./postgres.js')
    return openPostgres(settings.databaseUrl, settings.databaseTimeoutMs, settings.logger, {
      statementSpans: settings.statementSpans,
      replica: settings.replica,
    })
  }
  const { openPglite } = await import('./pglite.js')
  return openPglite(settings.dataDir, settings.logger, undefined, settings.statementSpans)
}
