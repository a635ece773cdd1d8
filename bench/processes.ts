import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { BENCH_ADMIN } from './instances.js'

/** An instance of the compiled service (`npm start`), in a process of its own. */
export interface InstanceProcess {
  url: string
  /** Resident set size now (VmRSS), in MiB. */
  residentMiB(): Promise<number>
  stop(): Promise<void>
}

const HEALTHY_WITHIN_MS = 60_000

/**
 * The environment of every instance: as bench/instances.ts configures the in-process
 * ones (budgets off; every client here is one address), over DATABASE_URL and REDIS_URL,
 * which several processes need in order to share their data and their events.
 */
function instanceEnvironment(): Record<string, string> {
  const { DATABASE_URL, REDIS_URL, PATH = '' } = process.env
  if (!DATABASE_URL || !REDIS_URL) {
    throw new Error(
      'several instances share one Postgres and one Redis: set DATABASE_URL and REDIS_URL',
    )
  }
  return {
    PATH,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
    JWT_SECRET: 'bench-secret-bench-secret-bench-secret',
    ADMIN_EMAIL: BENCH_ADMIN.email,
    ADMIN_PASSWORD: BENCH_ADMIN.password,
    RATE_LIMIT_MAX: '0',
    DATABASE_URL,
    REDIS_URL,
  }
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  return port
}

async function residentMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const kibibytes = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1])
  return kibibytes / 1024
}

async function untilHealthy(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + HEALTHY_WITHIN_MS
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the instance on ${url} exited`)
    const answered = await fetch(`${url}/health`).then(
      (response) => response.ok,
      () => false,
    )
    if (answered) return
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error(`the instance on ${url} did not answer /health within ${HEALTHY_WITHIN_MS} ms`)
}

/**
 * The command of package.json's `start` script (`node <flags> dist/src/server.js`), run
 * directly, so that the process measured and signalled is the one that serves.
 */
async function startCommand(): Promise<string[]> {
  const manifest = JSON.parse(await readFile('package.json', 'utf8')) as {
    scripts: { start: string }
  }
  const [program, ...args] = manifest.scripts.start.split(/\s+/)
  if (program !== 'node') throw new Error(`npm start runs ${program}, not node`)
  return args
}

/** One instance started; it migrates DATABASE_URL if it has to, as every start does. */
async function startInstanceProcess(args: string[]): Promise<InstanceProcess> {
  const port = await freePort()
  const child = spawn(process.execPath, args, {
    env: { ...instanceEnvironment(), PORT: String(port) },
    // Warnings and errors go to this process's output: a soak shows what went wrong.
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  const url = `http://127.0.0.1:${port}`
  await untilHealthy(url, child)
  return {
    url,
    residentMiB: () => residentMiB(child.pid as number),
    async stop() {
      if (child.exitCode !== null) return
      const exited = once(child, 'exit')
      child.kill('SIGTERM')
      await exited
    },
  }
}

/** `count` instances, one after the other (the first migrates; the others find it done). */
export async function startInstanceProcesses(count: number): Promise<InstanceProcess[]> {
  const args = await startCommand()
  const instances: InstanceProcess[] = []
  for (let index = 0; index < count; index += 1) instances.push(await startInstanceProcess(args))
  return instances
}
