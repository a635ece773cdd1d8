import { spawn, spawnSync } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, stopped, until } from './engines.js'

/** Debian's haproxy, which .ci/run installs: without it CI fails, elsewhere the suite skips. */
export const haproxyInstalled = spawnSync('haproxy', ['-v']).status === 0
if (process.env.CI === 'true' && !haproxyInstalled) {
  throw new Error('CI runs the HAProxy suite: install haproxy (apt-get install -y haproxy)')
}

/** The operator's file: the test edits only its server block, as an operator would. */
const CONFIGURATION = new URL('../../deploy/haproxy.cfg', import.meta.url)
const SERVER_BLOCK = /( *)# BEGIN servers[^\n]*\n[\s\S]*?# END servers\n/

export interface HaproxyServer {
  name: string
  port: number
}

/** One request as HAProxy's `option httplog` line tells it. */
export interface LoggedRequest {
  server: string
  status: number
  /** Who ended the session, and in which phase: `--` when nothing went wrong. */
  termination: string
  /** Connection attempts tried again: `+` before it when one went to another server. */
  retries: string
  method: string
  path: string
}

/** A server's health change as HAProxy logs it, with its reason (`Layer7 wrong status`…). */
export interface HealthChange {
  server: string
  state: 'UP' | 'DOWN'
  reason: string
  code?: number
}

/**
 * deploy/haproxy.cfg with these servers in its marked block, run in the foreground on a
 * free port, its admin socket in a temporary folder; stopped by its pid in `stop`, and at
 * the latest when the test process exits.
 */
export async function startHaproxy(servers: HaproxyServer[]) {
  const dir = await mkdtemp(join(tmpdir(), 'haproxy-'))
  const socketPath = join(dir, 'admin.sock')
  const port = await freePort()
  const file = join(dir, 'haproxy.cfg')
  await writeFile(file, await renderedConfiguration(servers))
  const child = spawn('haproxy', ['-db', '-f', file], {
    env: {
      PATH: process.env.PATH,
      HAPROXY_BIND: `127.0.0.1:${port}`,
      HAPROXY_STATS_SOCKET: socketPath,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const killOnExit = () => child.kill('SIGKILL')
  process.once('exit', killOnExit)
  // The log on standard output; warnings (health changes again) and errors on standard error.
  const output = { log: '', errors: '' }
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output.log += chunk
  })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    output.errors += chunk
  })
  const haproxy = {
    url: `http://127.0.0.1:${port}`,
    /** The sessions open on each server now (a WebSocket is one). */
    sessions: async () => perServer(await serverStats(socketPath), (stat) => Number(stat.scur)),
    /** Each server's status, and its last check's outcome and HTTP status (`L7OK`, 200). */
    checks: async () =>
      perServer(await serverStats(socketPath), (stat) => ({
        status: stat.status,
        check: stat.check_status,
        code: Number(stat.check_code),
      })),
    /** What went wrong with each server so far, by HAProxy's counters. */
    errors: async () => perServer(await serverStats(socketPath), errorCounts),
    /** When HAProxy's status of each of these servers first reads DOWN, in ms after `since`. */
    async downTimes(names: string[], since: number) {
      const seen: Record<string, number> = {}
      await until(async () => {
        const stats = await serverStats(socketPath)
        for (const name of names) {
          if (seen[name] === undefined && stats.get(name)?.status === 'DOWN') {
            seen[name] = Math.round(performance.now() - since)
          }
        }
        return names.every((name) => seen[name] !== undefined)
      }, 30_000)
      return seen
    },
    requests: () => output.log.split('\n').flatMap(loggedRequest),
    healthChanges: () => output.log.split('\n').flatMap(healthChange),
    async stop() {
      await stopped(child)
      process.removeListener('exit', killOnExit)
      await rm(dir, { recursive: true, force: true })
    },
  }
  try {
    await until(async () => {
      if (child.exitCode !== null) throw new Error(`haproxy exited: ${output.errors}`)
      const stats = await serverStats(socketPath)
      return servers.every(({ name }) => stats.get(name)?.status === 'UP')
    }, 30_000)
  } catch (error) {
    await haproxy.stop()
    const { message } = error as Error
    throw new Error(`HAProxy did not see every server up: ${message}\n${output.errors}`)
  }
  return haproxy
}

/**
 * HAProxy's counters of what went wrong with a server: connections that failed or were
 * tried again (on it, or on another one), responses that did not come or came broken (a
 * server's abort included), 5xx answers.
 */
const ERROR_COUNTERS = ['econ', 'wretr', 'wredis', 'eresp', 'srv_abrt', 'hrsp_5xx'] as const
type ErrorCounts = Record<(typeof ERROR_COUNTERS)[number], number>

const errorCounts = (stat: Record<string, string>) =>
  Object.fromEntries(
    ERROR_COUNTERS.map((counter) => [counter, Number(stat[counter] || 0)]),
  ) as ErrorCounts

export const NO_ERRORS = errorCounts({})

/** A value of each server's `show stat` row, by server name. */
const perServer = <T>(stats: ServerStats, value: (stat: Record<string, string>) => T) =>
  Object.fromEntries([...stats].map(([name, stat]) => [name, value(stat)])) as Record<string, T>

async function renderedConfiguration(servers: HaproxyServer[]) {
  const text = await readFile(CONFIGURATION, 'utf8')
  if (!SERVER_BLOCK.test(text)) throw new Error('deploy/haproxy.cfg has no marked server block')
  return text.replace(SERVER_BLOCK, (_, indent: string) =>
    servers.map(({ name, port }) => `${indent}server ${name} 127.0.0.1:${port}\n`).join(''),
  )
}

/** The CSV of `show stat` for the servers (not the frontend's and backend's own rows). */
type ServerStats = Map<string, Record<string, string>>

async function serverStats(socketPath: string): Promise<ServerStats> {
  const [header = '', ...rows] = (await adminCommand(socketPath, 'show stat')).trim().split('\n')
  const columns = header.replace(/^# /, '').split(',')
  const servers: ServerStats = new Map()
  for (const row of rows) {
    const values = row.split(',')
    const stat = Object.fromEntries(columns.map((column, index) => [column, values[index] ?? '']))
    const name = stat.svname ?? ''
    if (name !== 'FRONTEND' && name !== 'BACKEND') servers.set(name, stat)
  }
  return servers
}

function adminCommand(socketPath: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = ''
    const socket = connect(socketPath, () => socket.end(`${command}\n`))
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      answer += chunk
    })
    socket.once('end', () => resolve(answer))
    socket.once('error', reject)
  })
}

// `option httplog`: client [date] frontend backend/server timers status bytes cookies
// termination connections queues "request".
const REQUEST_LINE =
  /^\S+ \[[^\]]+\] \S+ [^/\s]+\/(\S+) \S+ (-?\d+) \S+ \S+ \S+ (\S{4}) (?:\d+\/){4}(\+?\d+) \S+ (?:\{[^}]*\} )*"(\S+) (\S+)/

function loggedRequest(line: string): LoggedRequest[] {
  const match = REQUEST_LINE.exec(line)
  if (!match) return []
  const [, server = '', status, termination = '', retries = '', method = '', path = ''] = match
  const request = { server, status: Number(status), termination: termination.slice(0, 2) }
  return [{ ...request, retries, method, path }]
}

const HEALTH_LINE = /Server [^/\s]+\/(\S+) is (UP|DOWN), reason: ([^,]+)(?:, code: (\d+))?/

function healthChange(line: string): HealthChange[] {
  const match = HEALTH_LINE.exec(line)
  if (!match) return []
  const [, server = '', state, reason = '', code] = match
  return [
    {
      server,
      state: state as HealthChange['state'],
      reason,
      ...(code && { code: Number(code) }),
    },
  ]
}
