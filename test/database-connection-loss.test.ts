import { sql } from 'drizzle-orm'
import postgresClient from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { rowsOf } from '../src/db/statement-rows.js'
import { backends } from './helpers/backends.js'
import { type RelayedDatabase, relayedDatabase } from './helpers/relayed-database.js'

/**
 * A connection lost in the middle of a transaction fails that transaction and nothing
 * more. postgres.js 3.4.9 then writes its ROLLBACK on the dead connection: on a socket it
 * has already let go of, that throws from a timer and kills the process; queued behind
 * the close, it is left in the connection's buffer, which is never written again
 * (porsager/postgres#1208, patched in patches/).
 */

const postgres = backends.find((backend) => backend.name === 'postgres')
const POOL_SIZE = 10

describe.runIf(postgres)('a connection lost in the middle of a transaction', () => {
  let relayed: RelayedDatabase
  let killer: ReturnType<typeof postgresClient>
  const uncaught: unknown[] = []
  const recordUncaught = (error: unknown) => uncaught.push(error)

  beforeAll(async () => {
    process.on('uncaughtExceptionMonitor', recordUncaught)
    relayed = await relayedDatabase(postgres as NonNullable<typeof postgres>, 300)
    killer = postgresClient(relayed.direct.url as string, { max: 1, onnotice: () => {} })
  })
  afterAll(async () => {
    process.off('uncaughtExceptionMonitor', recordUncaught)
    await killer?.end({ timeout: 0 })
    await relayed?.close()
  })

  /** Runs a transaction that waits in a statement until `lose` takes its connection. */
  async function transactionLosing(lose: (backendPid: number) => unknown) {
    let backendPid: number | undefined
    const transaction = relayed.database.db.transaction(async (tx) => {
      backendPid = rowsOf<{ pid: number }>(await tx.execute(sql`select pg_backend_pid() as pid`))[0]
        ?.pid
      await tx.execute(sql`select pg_sleep(0.25)`)
    })
    await expect.poll(() => backendPid).toBeDefined()
    await lose(backendPid as number)
    return transaction
  }

  /** Every connection of the pool at once: a connection left unable to write would fail. */
  async function everyConnectionServes() {
    const answers = await Promise.all(
      Array.from({ length: POOL_SIZE }, (_, index) =>
        relayed.database.db.execute(sql`select ${index}::int as n, pg_sleep(0.05)`),
      ),
    )
    expect(answers.map((answer) => rowsOf<{ n: number }>(answer)[0]?.n)).toEqual(
      Array.from({ length: POOL_SIZE }, (_, index) => index),
    )
  }

  /** Lets any write left scheduled on the dead connection run. */
  const settled = () => new Promise((resolve) => setTimeout(resolve, 100))

  it('when the server ends its backend: the transaction fails, the process lives on', async () => {
    const transaction = transactionLosing((pid) => killer`select pg_terminate_backend(${pid})`)
    await expect(transaction).rejects.toThrow()
    await settled()
    expect(uncaught).toEqual([])
    await everyConnectionServes()
  })

  it('when the network goes silent: the transaction fails, the process lives on', async () => {
    const transaction = transactionLosing(() => relayed.relay.stall())
    await expect(transaction).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' })
    await settled()
    expect(uncaught).toEqual([])
    await relayed.relay.restore()
    await everyConnectionServes()
  })

  it('when the connection is cut: the transaction fails, the process lives on', async () => {
    const transaction = transactionLosing(() => relayed.relay.cut())
    await expect(transaction).rejects.toThrow()
    await settled()
    expect(uncaught).toEqual([])
    await relayed.relay.restore()
    await everyConnectionServes()
  })
})
