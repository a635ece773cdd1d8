import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/client.js'
import type { DatabaseHandle } from '../src/db/database.js'
import { backends } from './helpers/backends.js'
import { collect, graphql, wsClient } from './helpers/graphql.js'
import { type ReplicatedPostgres, replicatedPostgres } from './helpers/postgres-cluster.js'
import { redisUrl } from './helpers/redis.js'
import { freshAccount, startServer, type TestServer, testEnvironment } from './helpers/server.js'

/**
 * A primary and a streaming replica of the test's own, the replica's replay paused and
 * resumed, stopped and started again. Which database answered is told by what it
 * answers: with replay paused, the primary has a product's new name and the replica its
 * old one. Two lag bounds make it deterministic without timing anything: 10 minutes
 * ("patient": a paused replica is still within it) and 300 ms ("strict": it is not).
 */

const postgresBackend = backends.find((backend) => backend.name === 'postgres')
const PATIENT = { REPLICA_MAX_LAG_MS: '600000', CACHE_TTL_SECONDS: '0' }
const STRICT = { REPLICA_MAX_LAG_MS: '300', CACHE_TTL_SECONDS: '0' }
const migrations = JSON.parse(readFileSync('drizzle/meta/_journal.json', 'utf8')).entries.length
const WAIT = { timeout: 20_000, interval: 50 }

describe.runIf(postgresBackend && redisUrl)('a Postgres read replica', () => {
  let clusters: ReplicatedPostgres
  const databases: DatabaseHandle[] = []
  const servers: TestServer[] = []
  // One deployment's Redis keys: the cached instances share them.
  const redisKeyPrefix = `replica-${randomBytes(6).toString('hex')}:`
  let patient: TestServer
  let strict: TestServer
  let admin: string
  /** A caller that never writes: its reads may go to the replica. */
  let reader: string

  beforeAll(async () => {
    clusters = await replicatedPostgres()
  }, 60_000)
  afterAll(async () => {
    for (const server of servers) await server.close()
    for (const database of databases) await database.close()
    await clusters?.stop()
  })

  const environmentOf = (environment: Record<string, string>) => ({
    DATABASE_URL: clusters.primaryUrl,
    DATABASE_REPLICA_URL: clusters.replicaUrl,
    ...environment,
  })

  /** The service's database handle, opened as src/server.ts opens it. */
  async function open(environment: Record<string, string>) {
    const config = loadConfig({ ...testEnvironment, ...environmentOf(environment) })
    const database = await openDatabase(config)
    databases.push(database)
    return database
  }

  /** An instance over the primary and the replica, once its replica is in use. */
  async function instance(environment: Record<string, string>, database?: DatabaseHandle) {
    const handle = database ?? (await open(environment))
    const server = await startServer(
      postgresBackend as NonNullable<typeof postgresBackend>,
      environmentOf(environment),
      { testDatabase: { database: handle, redisKeyPrefix, drop: async () => {} } },
    )
    servers.push(server)
    await expect.poll(() => readiness(server), WAIT).toEqual({ status: 'ok' })
    return server
  }

  const readiness = async (server: TestServer) => {
    const ready = await server.api.get('/ready')
    expect(ready.status).toBe(200)
    return ready.body.data
  }
  const DEGRADED = { status: 'degraded', slow: ['replica'] }

  const nameOf = async (server: TestServer, id: number, token?: string) => {
    const read = await server.api.get(`/products/${id}`, token ? { token } : {})
    expect(read.status).toBe(200)
    return read.body.data.name as string
  }
  const listedNames = async (server: TestServer, category: string, token?: string) => {
    const list = await server.api.get(`/products?category=${category}`, token ? { token } : {})
    expect(list.status).toBe(200)
    return list.body.data.map((product: { name: string }) => product.name)
  }

  /** Reads each database of `server` has served so far (its /metrics). */
  async function served(server: TestServer) {
    const scrape = await server.api.get('/metrics', { token: admin })
    const count = (database: string) =>
      Number(
        new RegExp(`database_replica_reads_total\\{served_by="${database}"\\} (\\d+)`).exec(
          scrape.text,
        )?.[1] ?? 0,
      )
    return { replica: count('replica'), primary: count('primary') }
  }

  async function createProduct(server: TestServer, name: string, category: string) {
    const created = await server.api.post('/products', {
      json: { name, price: 12.5, category },
      token: admin,
    })
    expect(created.status).toBe(201)
    return created.body.data.id as number
  }

  const rename = async (server: TestServer, id: number, name: string) =>
    expect(
      (await server.api.patch(`/products/${id}`, { json: { name }, token: admin })).status,
    ).toBe(200)

  it('migrates the primary only: the replica is sent no statement of the migrator', async () => {
    const database = await open(PATIENT)
    // The replica's log holds what the service sends it: the probe's statements, already.
    await expect
      .poll(async () => (await clusters.replicaLog()).includes('pg_last_wal_replay_lsn'), WAIT)
      .toBe(true)
    await database.migrate()
    await clusters.replicated()

    const log = await clusters.replicaLog()
    expect(log).not.toMatch(/__drizzle_migrations|pg_advisory_lock|create (table|index|extension)/i)
    expect(log).not.toMatch(/ERROR/)
    const countOn = async (sql: ReplicatedPostgres['primary']) =>
      Number((await sql`select count(*) from drizzle.__drizzle_migrations`)[0]?.count)
    expect(await countOn(clusters.primary)).toBe(migrations)
    // There by replication.
    expect(await countOn(clusters.replica)).toBe(migrations)

    patient = await instance(PATIENT, database)
    admin = (await freshAccount(patient, 'admin')).accessToken
    reader = (await freshAccount(patient)).accessToken
  })

  it('serves lists and reads by id from the replica while it lags less than REPLICA_MAX_LAG_MS, and the primary past it', async () => {
    strict = await instance(STRICT)
    const id = await createProduct(patient, 'Replica lamp', 'replica-lamps')
    await clusters.replicated()
    const before = await served(patient)

    await clusters.pauseReplay()
    try {
      await rename(patient, id, 'Replica lamp, renamed')
      // The replica's old row, to a caller who did not write; the writer's own write.
      expect(await nameOf(patient, id)).toBe('Replica lamp')
      expect(await listedNames(patient, 'replica-lamps', reader)).toEqual(['Replica lamp'])
      expect(await nameOf(patient, id, admin)).toBe('Replica lamp, renamed')
      expect(await listedNames(patient, 'replica-lamps', admin)).toEqual(['Replica lamp, renamed'])
      expect(await readiness(patient)).toEqual({ status: 'ok' })
      const during = await served(patient)
      expect(during.replica - before.replica).toBe(2)
      expect(during.primary - before.primary).toBe(2)

      // Past 300 ms of lag, everyone reads the primary, and /ready says so.
      await expect.poll(() => readiness(strict), WAIT).toEqual(DEGRADED)
      expect(await nameOf(strict, id)).toBe('Replica lamp, renamed')
      expect(await listedNames(strict, 'replica-lamps', reader)).toEqual(['Replica lamp, renamed'])
    } finally {
      await clusters.resumeReplay()
    }
    await expect.poll(() => readiness(strict), WAIT).toEqual({ status: 'ok' })
    const resumed = await served(strict)
    await expect
      .poll(async () => {
        expect(await nameOf(strict, id)).toBe('Replica lamp, renamed')
        return (await served(strict)).replica > resumed.replica
      }, WAIT)
      .toBe(true)
  })

  it('sends the reads of a caller who wrote, by REST, GraphQL or WebSocket, to the primary', async () => {
    const id = await createProduct(patient, 'Writer chair', 'writer-chairs')
    const mutator = (await freshAccount(patient)).accessToken
    const socketMutator = (await freshAccount(patient)).accessToken
    await clusters.replicated()
    await clusters.pauseReplay()
    try {
      await rename(patient, id, 'Writer chair, renamed')
      const sendMessage =
        'mutation { sendMessage(text: "hello", author: "me", chatId: "replica") { id } }'
      const sent = await graphql(patient.baseUrl, sendMessage, {}, mutator)
      expect(sent.body.errors).toBeUndefined()
      const socket = wsClient(patient.baseUrl, { authToken: socketMutator })
      await collect(socket, sendMessage).until(1)
      await socket.dispose()
      // A query is no write.
      const queried = await graphql(
        patient.baseUrl,
        '{ messages(chatId: "replica") { id } }',
        {},
        reader,
      )
      expect(queried.body.errors).toBeUndefined()

      expect(await nameOf(patient, id, admin)).toBe('Writer chair, renamed')
      expect(await nameOf(patient, id, mutator)).toBe('Writer chair, renamed')
      expect(await nameOf(patient, id, socketMutator)).toBe('Writer chair, renamed')
      expect(await nameOf(patient, id, reader)).toBe('Writer chair')
      expect(await nameOf(patient, id)).toBe('Writer chair')
      // An anonymous writer is its address (every anonymous caller of this test, from now on).
      const reset = await patient.api.post('/auth/password-reset', {
        json: { email: 'nobody@example.com' },
      })
      expect(reset.status).toBe(202)
      expect(await nameOf(patient, id)).toBe('Writer chair, renamed')
    } finally {
      await clusters.resumeReplay()
    }
  })

  it('fills the read cache from the primary after a write, on every instance: never with the replica old row', async () => {
    const cached = {
      REPLICA_MAX_LAG_MS: '600000',
      CACHE_TTL_SECONDS: '60',
      REDIS_URL: redisUrl as string,
    }
    const [writer, other] = [await instance(cached), await instance(cached)]
    const id = await createProduct(writer, 'Cached desk', 'cached-desks')
    await clusters.replicated()
    // Entries of the product as it is, which the write below makes stale.
    expect(await nameOf(other, id)).toBe('Cached desk')
    expect(await listedNames(other, 'cached-desks')).toEqual(['Cached desk'])

    await clusters.pauseReplay()
    try {
      await rename(writer, id, 'Cached desk, renamed')
      // Another instance, a caller who did not write: the fills come from the primary.
      expect(await nameOf(other, id)).toBe('Cached desk, renamed')
      expect(await listedNames(other, 'cached-desks')).toEqual(['Cached desk, renamed'])
      // And what they stored is what the writer reads there, and where it wrote.
      expect(await nameOf(other, id, admin)).toBe('Cached desk, renamed')
      expect(await nameOf(writer, id)).toBe('Cached desk, renamed')
      // Meanwhile the replica still has the old row.
      expect(await nameOf(patient, id, reader)).toBe('Cached desk')
    } finally {
      await clusters.resumeReplay()
    }
  })

  it('answers every read from the primary while the replica is down, and uses it again once it is back', async () => {
    const id = await createProduct(patient, 'Crash cushion', 'crash-cushions')
    await clusters.replicated()
    expect(await readiness(patient)).toEqual({ status: 'ok' })

    await clusters.killReplica()
    // At once, before or after the probe finds it gone: reads that fail on it are retried.
    const reads = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        index % 2 === 0
          ? nameOf(patient, id, reader)
          : listedNames(patient, 'crash-cushions', reader).then((names) => names[0]),
      ),
    )
    expect(reads).toEqual(Array(10).fill('Crash cushion'))
    await expect.poll(() => readiness(patient), WAIT).toEqual(DEGRADED)
    const down = await served(patient)
    expect(await nameOf(patient, id, reader)).toBe('Crash cushion')
    expect(await served(patient)).toEqual({ replica: down.replica, primary: down.primary + 1 })

    await clusters.startReplica()
    await expect.poll(() => readiness(patient), WAIT).toEqual({ status: 'ok' })
    expect(await nameOf(patient, id, reader)).toBe('Crash cushion')
    expect((await served(patient)).replica).toBe(down.replica + 1)
  })
})
