import { PGlite, types } from '@electric-sql/pglite'
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin'
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm'
import type { Logger } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/pglite'
import { migrate } from 'drizzle-orm/pglite/migrator'
import { migrationsPath } from '../paths.js'
import type { Database, DatabaseHandle } from './database.js'
import { PLANNER_SETTINGS } from './planner-settings.js'
import * as schema from './schema.js'
import { type StatementSpans, withPgliteStatementSpans } from './statement-spans.js'

export interface PgliteHandle extends DatabaseHandle {
  /** The data directory as a tarball, which `loadDataDir` starts a copy from. */
  dump(): Promise<Blob>
}

/**
 * The embedded database in `dataDir`. A new one starts from `loadDataDir`, a dump of
 * another, when given: the test suites start each of theirs from one migrated database,
 * where initdb and the migrations take seconds on a busy machine.
 */
export async function openPglite(
  dataDir: string,
  logger?: Logger,
  loadDataDir?: Blob,
  statementSpans?: StatementSpans,
): Promise<PgliteHandle> {
  const client = await PGlite.create(dataDir, {
    extensions: { btree_gin, pg_trgm },
    loadDataDir,
    serializers: { [types.BYTEA]: byteaText },
    parsers: { [types.BYTEA]: byteaBytes },
  })
  for (const [name, value] of Object.entries(PLANNER_SETTINGS)) {
    await client.query('select set_config($1, $2, false)', [name, value])
  }
  const traced = statementSpans ? withPgliteStatementSpans(client, statementSpans) : client
  const db = drizzle({ client: traced, schema, ...(logger && { logger }) })
  return {
    kind: 'pglite',
    db: db as unknown as Database,
    // One embedded connection serves the whole process, so nothing can race the migration.
    migrate: () => migrate(db, { migrationsFolder: migrationsPath }),
    ping: async () => {
      await client.query('select 1')
    },
    dump: () => client.dumpDataDir('none'),
    close: () => client.close(),
  }
}

/*
 * bytea as Postgres's hex text, through Buffer: PGlite's own conversions go a byte at a
 * time through arrays of strings, which made storing and reading uploads several times
 * slower.
 */
function byteaText(bytes: Uint8Array): string {
  return `\\x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}`
}

function byteaBytes(text: string): Buffer {
  return Buffer.from(text.slice(2), 'hex')
}
