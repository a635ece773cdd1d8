import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { freePort, isRunning, stopped, until } from './engines.js'
import { tcpRelay } from './tcp-relay.js'

/** Real Redis for the multi-instance suites: set in CI, where those suites are mandatory. */
export const redisUrl = process.env.TEST_REDIS_URL
if (process.env.CI === 'true' && !redisUrl) {
  throw new Error('CI runs the Redis suites: set TEST_REDIS_URL')
}

/** A relay to Redis that a test can cut, stall and restore (see tcpRelay). */
export const redisRelay = tcpRelay

/**
 * A redis-server of the test's own, on a port of its own, that the test can kill outright
 * (SIGKILL: no goodbye to its clients) and start again on the same port, empty, as a
 * crashed and restarted Redis comes back.
 */
export async function ownRedis() {
  const port = await freePort()
  let server: ChildProcess | undefined
  const start = async () => {
    server = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    )
    await until(() => answers(port))
  }
  await start()
  return {
    url: `redis://127.0.0.1:${port}`,
    async kill() {
      const exited = once(server as ChildProcess, 'exit')
      server?.kill('SIGKILL')
      await exited
    },
    start,
    async stop() {
      if (server) await stopped(server)
    },
  }
}

/**
 * What keeps a test's own Redis off the disk; a replica still writes the copy its
 * primary sends it (into `dir`).
 */
const engineArguments = (port: number, dir: string) => [
  ...['--port', String(port), '--bind', '127.0.0.1', '--dir', dir],
  ...['--save', '', '--appendonly', 'no'],
]

/**
 * A primary, one replica and three Sentinels of the test's own, on ports of their own,
 * each Sentinel with a generated configuration in a temporary folder. They notice a dead
 * primary after a second and promote the replica. `killPrimary` is the realistic fault:
 * SIGKILL, no goodbye to its clients. Every process is stopped by its pid in `stop`, and
 * at the latest when the test process exits, whatever failed.
 */
export async function sentinelRedis(name = 'catalog') {
  const dir = await mkdtemp(join(tmpdir(), 'sentinel-'))
  const processes: ChildProcess[] = []
  const killAll = () => {
    for (const child of processes) if (isRunning(child)) child.kill('SIGKILL')
  }
  process.once('exit', killAll)
  const started = (args: string[]) => {
    const child = spawn('redis-server', args, { stdio: 'ignore' })
    processes.push(child)
    return child
  }
  try {
    const primaryPort = await freePort()
    const primary = started(engineArguments(primaryPort, dir))
    await until(() => answers(primaryPort))
    const replicaPort = await freePort()
    started(engineArguments(replicaPort, dir))
    await until(() => answers(replicaPort))
    await onPort(replicaPort, (client) => client.replicaof('127.0.0.1', primaryPort))
    const sentinelPorts: number[] = []
    for (let index = 0; index < 3; index += 1) {
      const port = await freePort()
      const file = join(dir, `sentinel-${port}.conf`)
      await writeFile(file, sentinelConfiguration(port, name, primaryPort, dir))
      started([file, '--sentinel'])
      sentinelPorts.push(port)
    }
    await until(async () => (await Promise.all(sentinelPorts.map(answers))).every(Boolean))
    // A failover needs the replica in sync, and each Sentinel aware of it and of the others.
    await until(() => replicaInSync(replicaPort), 20_000)
    await until(async () => {
      const views = await Promise.all(sentinelPorts.map((port) => sentinelView(port, name)))
      return views.every(({ replicas, sentinels }) => replicas === 1 && sentinels === 2)
    }, 30_000)
    return {
      name,
      sentinels: sentinelPorts.map((port) => `127.0.0.1:${port}`).join(','),
      primaryPort,
      /** The primary's address as the Sentinels give it now. */
      primaryNamed: () =>
        onPort(sentinelPorts[0] as number, async (client) => {
          const [, port] = (await client.call(
            'SENTINEL',
            'get-master-addr-by-name',
            name,
          )) as string[]
          return Number(port)
        }),
      /** Waits until the replica holds every write the primary took so far. */
      replicated: () => onPort(primaryPort, (client) => client.wait(1, 5000)),
      async killPrimary() {
        const exited = once(primary, 'exit')
        primary.kill('SIGKILL')
        await exited
      },
      async stop() {
        await Promise.all(processes.filter(isRunning).map(stopped))
        process.removeListener('exit', killAll)
        await rm(dir, { recursive: true, force: true })
      },
    }
  } catch (error) {
    killAll()
    await rm(dir, { recursive: true, force: true })
    throw error
  }
}

function sentinelConfiguration(port: number, name: string, primaryPort: number, dir: string) {
  return [
    `port ${port}`,
    'bind 127.0.0.1',
    `dir ${dir}`,
    `sentinel monitor ${name} 127.0.0.1 ${primaryPort} 2`,
    `sentinel down-after-milliseconds ${name} 1000`,
    `sentinel failover-timeout ${name} 3000`,
    '',
  ].join('\n')
}

/** A short-lived client of the Redis or Sentinel on `port`. */
async function onPort<T>(port: number, use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    retryStrategy: () => null,
    lazyConnect: true,
  })
  client.on('error', () => {})
  try {
    await client.connect()
    return await use(client)
  } finally {
    client.disconnect()
  }
}

const replicaInSync = (port: number) =>
  onPort(port, async (client) =>
    (await client.info('replication')).includes('master_link_status:up'),
  )

async function sentinelView(port: number, name: string) {
  return onPort(port, async (client) => ({
    replicas: ((await client.call('SENTINEL', 'replicas', name)) as unknown[]).length,
    sentinels: ((await client.call('SENTINEL', 'sentinels', name)) as unknown[]).length,
  }))
}

/** Whether a Redis answers PING on the port. */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write('PING\r\n'))
    socket.once('data', (data) => {
      socket.destroy()
      resolve(String(data).startsWith('+PONG'))
    })
    socket.once('error', () => resolve(false))
  })
}
