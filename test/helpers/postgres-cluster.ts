import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { accessSync, chownSync, constants, openSync, readdirSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import postgres from 'postgres'
import { freePort } from './engines.js'

/**
 * A Postgres primary and a streaming replica of the test's own: `initdb` a primary on a
 * free port in a temporary directory, `pg_basebackup -R` a copy of it, both started by
 * the test and stopped by their pids in `stop` (at the latest when the test process
 * exits, whatever failed). The replica logs every statement it is sent (`replicaLog`).
 * Postgres refuses to run as root: as root, the engines run as the `postgres` user,
 * which owns the directory.
 */
export async function replicatedPostgres() {
  const root = await mkdtemp(join(tmpdir(), 'replicated-postgres-'))
  const owner = engineOwner()
  if (owner) chownSync(root, owner.uid, owner.gid)
  const engines = new Set<ChildProcess>()
  const killAll = () => {
    for (const engine of engines) engine.kill('SIGQUIT')
  }
  process.once('exit', killAll)
  const clients: postgres.Sql[] = []
  try {
    const primaryPort = await freePort()
    const replicaPort = await freePort()
    const urlOf = (port: number) => `postgres://postgres@127.0.0.1:${port}/postgres`
    const clientOf = (port: number) => {
      const client = postgres(urlOf(port), { max: 1, onnotice: () => {}, connect_timeout: 2 })
      clients.push(client)
      return client
    }
    /** The server as `postgres -D dir` starts it, on its port, its socket in `root`. */
    const start = async (dir: string, port: number, settings: string[], logFile?: string) => {
      const log = logFile ? openSync(logFile, 'a') : 'ignore'
      const engine = spawn(
        binary('postgres'),
        [
          '-D',
          dir,
          '-p',
          String(port),
          '-k',
          root,
          '-c',
          'listen_addresses=127.0.0.1',
          ...settings,
        ],
        { stdio: ['ignore', log, log], ...owner },
      )
      engines.add(engine)
      engine.once('exit', () => engines.delete(engine))
      await answering(urlOf(port), engine)
      return engine
    }

    const primaryDir = join(root, 'primary')
    run(
      'initdb',
      ['-D', primaryDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '-N'],
      owner,
    )
    // Replication is what initdb sets up by default (wal_level, senders, a trusted
    // `replication` line for 127.0.0.1 in pg_hba.conf); said here so that it shows.
    const primarySettings = [
      '-c',
      'wal_level=replica',
      '-c',
      'max_wal_senders=4',
      '-c',
      'fsync=off',
    ]
    await start(primaryDir, primaryPort, primarySettings)
    const replicaDir = join(root, 'replica')
    const backup = ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres']
    run('pg_basebackup', [...backup, '-D', replicaDir, '-R', '-X', 'stream', '-c', 'fast'], owner)
    const replicaLog = join(root, 'replica.log')
    const replicaSettings = ['-c', 'hot_standby=on', '-c', 'fsync=off', '-c', 'log_statement=all']
    let replica = await start(replicaDir, replicaPort, replicaSettings, replicaLog)

    const primaryClient = clientOf(primaryPort)
    const replicaClient = clientOf(replicaPort)
    return {
      primaryUrl: urlOf(primaryPort),
      replicaUrl: urlOf(replicaPort),
      primary: primaryClient,
      replica: replicaClient,
      /** Every statement the replica was sent so far, as its log has them. */
      replicaLog: () => readFile(replicaLog, 'utf8'),
      /** Waits until the replica has replayed all the primary has written so far. */
      async replicated() {
        const [{ lsn }] = await primaryClient<[{ lsn: string }]>`select pg_current_wal_lsn() as lsn`
        await until(async () => {
          const [{ done }] = await replicaClient<[{ done: boolean }]>`
            select pg_last_wal_replay_lsn() >= ${lsn}::pg_lsn as done`
          return done
        }, 'the replica to replay the primary')
      },
      /** Replay stops: WAL keeps arriving, and waits. */
      async pauseReplay() {
        await replicaClient`select pg_wal_replay_pause()`
        await until(async () => {
          const [{ state }] = await replicaClient<[{ state: string }]>`
            select pg_get_wal_replay_pause_state() as state`
          return state === 'paused'
        }, 'replay to pause')
      },
      async resumeReplay() {
        await replicaClient`select pg_wal_replay_resume()`
      },
      /** An immediate shutdown (SIGQUIT): a crash, its clients cut without a word. */
      async killReplica() {
        const exited = once(replica, 'exit')
        replica.kill('SIGQUIT')
        await exited
      },
      /** The replica again, on its port: it recovers, then streams from the primary. */
      async startReplica() {
        replica = await start(replicaDir, replicaPort, replicaSettings, replicaLog)
      },
      async stop() {
        await Promise.all(clients.map((client) => client.end({ timeout: 1 })))
        await Promise.all([...engines].map(stopped))
        process.removeListener('exit', killAll)
        await rm(root, { recursive: true, force: true })
      },
    }
  } catch (error) {
    await Promise.all(clients.map((client) => client.end({ timeout: 1 })))
    killAll()
    await rm(root, { recursive: true, force: true })
    throw error
  }
}

export type ReplicatedPostgres = Awaited<ReturnType<typeof replicatedPostgres>>

/** The user engines run as: `postgres` when the test runs as root, else the test's own. */
function engineOwner(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }))
  return { uid: id('-u'), gid: id('-g') }
}

/** A Postgres program: on PATH, or in the newest /usr/lib/postgresql/<version>/bin. */
function binary(name: string): string {
  const versions = readdirSafe('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a))
  const dirs = [
    ...(process.env.PATH ?? '').split(delimiter),
    ...versions.map((version) => `/usr/lib/postgresql/${version}/bin`),
  ]
  for (const dir of dirs) {
    try {
      accessSync(join(dir, name), constants.X_OK)
      return join(dir, name)
    } catch {
      // Not in this one.
    }
  }
  throw new Error(`${name} is not installed (on PATH or under /usr/lib/postgresql)`)
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir)
  } catch {
    return []
  }
}

function run(name: string, args: string[], owner: { uid: number; gid: number } | undefined) {
  execFileSync(binary(name), args, { stdio: ['ignore', 'ignore', 'pipe'], ...owner })
}

/** Waits until the server at `url` answers a query, or its process has exited. */
async function answering(url: string, engine: ChildProcess) {
  const client = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 1 })
  try {
    await until(async () => {
      if (engine.exitCode !== null) throw new Error(`postgres exited with ${engine.exitCode}`)
      await client`select 1`
      return true
    }, 'postgres to accept connections')
  } finally {
    await client.end({ timeout: 1 })
  }
}

/** A fast shutdown (SIGINT), waited for. */
async function stopped(engine: ChildProcess) {
  const exited = once(engine, 'exit')
  engine.kill('SIGINT')
  await exited
}

async function until(ready: () => Promise<boolean>, what: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    let error: unknown
    try {
      if (await ready()) return
    } catch (caught) {
      error = caught
      if (String(caught).includes('postgres exited')) throw caught
    }
    if (Date.now() > deadline) throw new Error(`waited in vain for ${what}: ${error ?? ''}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
