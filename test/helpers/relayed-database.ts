import { openDatabase } from '../../src/db/client.js'
import type { Backend } from './backends.js'
import { tcpRelay } from './tcp-relay.js'

/** A Postgres database of its own, which the service's client reaches through a relay. */
export async function relayedDatabase(postgres: Backend, databaseTimeoutMs: number) {
  const direct = await postgres.open()
  const relay = await tcpRelay(direct.url as string)
  const relayed = new URL(direct.url as string)
  relayed.port = String(relay.port)
  const database = await openDatabase({
    databaseUrl: relayed.href,
    dataDir: 'unused',
    databaseTimeoutMs,
  })
  return {
    direct,
    relay,
    database,
    async close() {
      await database.close()
      await relay.close()
      await direct.drop()
    },
  }
}

export type RelayedDatabase = Awaited<ReturnType<typeof relayedDatabase>>
