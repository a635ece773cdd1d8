// `make smoke`: start the compiled server on an in-memory database, check that it answers
// GET /health and POST /graphql { __typename }, report how long the first answer took
// with the CPU time it cost, the resident memory, and stop it. Plain JavaScript, so it runs
// after `npm ci --omit=dev`.
//
//   node tools/smoke.mjs [--runs=N] [command…]    (default command: package.json's start script)
//
// With --runs, the figures are medians over N starts: `node tools/smoke.mjs --runs=5
// node --import tsx src/server.ts` measures the TypeScript entry point the same way.
import { execFileSync, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

const args = process.argv.slice(2)
const runsArg = args.find((arg) => arg.startsWith('--runs='))
const runs = runsArg ? Number(runsArg.slice('--runs='.length)) : 1
const command = args.filter((arg) => arg !== runsArg)
// The start script itself, so that its Node flags are checked on the Node that runs this.
const startCommand = () => JSON.parse(readFileSync('package.json', 'utf8')).scripts.start.split(' ')
const [file, ...fileArgs] = command.length > 0 ? command : startCommand()

const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
    server.on('error', reject)
  })

/** A process and its descendants (tsx's esbuild service) from `ps`: pid, ppid, rss in KiB. */
function processTree(pid) {
  const rows = execFileSync('ps', ['-A', '-o', 'pid=,ppid=,rss='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((row) => row.trim().split(/\s+/).map(Number))
  const tree = new Set([pid])
  for (let grew = true; grew; ) {
    grew = false
    for (const [child, parent] of rows) {
      if (tree.has(parent) && !tree.has(child)) {
        tree.add(child)
        grew = true
      }
    }
  }
  return rows.filter(([p]) => tree.has(p))
}

/** CPU seconds a process has used (Linux only): a start's cost on a machine others share. */
function cpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100 // utime + stime, in 1/100 s ticks
  } catch {
    return Number.NaN
  }
}

function measure(pid) {
  const tree = processTree(pid)
  return {
    own: tree.find(([p]) => p === pid)?.[2] ?? 0,
    total: tree.reduce((sum, [, , rss]) => sum + rss, 0),
    cpu: tree.reduce((sum, [p]) => sum + cpuSeconds(p), 0),
  }
}

async function startOnce() {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const started = performance.now()
  const child = spawn(file, fileArgs, {
    env: { ...process.env, DATA_DIR: 'memory://', HOST: '127.0.0.1', PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  try {
    let firstAnswerMs
    while (firstAnswerMs === undefined) {
      if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}):\n${stderr}`)
      if (performance.now() - started > 60_000) throw new Error('no answer on /health in 60 s')
      const ok = await fetch(`${base}/health`).then(
        (response) => response.ok,
        () => false,
      )
      if (ok) firstAnswerMs = performance.now() - started
      else await sleep(10)
    }
    const graphql = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __typename }' }),
    }).then((response) => response.json())
    if (graphql?.data?.__typename !== 'Query') {
      throw new Error(`POST /graphql answered ${JSON.stringify(graphql)}`)
    }
    return { firstAnswerMs, ...measure(child.pid) }
  } finally {
    child.kill('SIGTERM')
    const stopped = await Promise.race([exited.then(() => true), sleep(15_000, false)])
    if (!stopped) child.kill('SIGKILL')
  }
}

const median = (values) => values.toSorted((a, b) => a - b)[Math.floor(values.length / 2)]
const results = []
for (let run = 0; run < runs; run++) results.push(await startOnce())
const mib = (kib) => `${(kib / 1024).toFixed(0)} MiB`
console.log(
  `${[file, ...fileArgs].join(' ')}: /health and GraphQL answer; ` +
    `first 200 on /health after ${median(results.map((r) => r.firstAnswerMs)).toFixed(0)} ms ` +
    `(CPU ${median(results.map((r) => r.cpu)).toFixed(2)} s), ` +
    `RSS ${mib(median(results.map((r) => r.own)))} ` +
    `(with child processes ${mib(median(results.map((r) => r.total)))})` +
    (runs > 1 ? `, medians of ${runs} starts` : ''),
)
