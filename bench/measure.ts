import autocannon from 'autocannon'

/** One load: what is sent, and the status every answer must have. */
export interface Workload {
  name: string
  request: Pick<autocannon.Options, 'method' | 'headers' | 'body'> & { path: string }
  /** Bodies sent in turn instead of `request.body`, so requests need not all be alike. */
  bodies?: string[]
  status: number
}

export interface Measurement {
  requestsPerSecond: number
  p99Ms: number
  /** Answers with another status, GraphQL answers with errors, and transport errors. */
  failures: number
}

export const CONNECTIONS = 50
const DURATION = Number(process.env.DURATION ?? 10)
const WARMUP = Number(process.env.WARMUP ?? 2)
/**
 * Longer than any run, so only an answer counts, however long it queued: on PGlite every
 * statement waits its turn on the one connection, and a list of 150 ms keeps the 50th
 * client waiting 7.5 s, past autocannon's default of 10 s once warm-up's queue adds to it.
 * The p99 shows the queue; a run that answers nothing is a failure (see run).
 */
const TIMEOUT = 2 * Math.max(DURATION, WARMUP)

/** A GraphQL answer of status 200 may still carry errors: those count as failures. */
const withoutErrors = (body: string | Buffer | undefined) => !String(body).includes('"errors"')

/** Hands out `bodies` in turn, one per request, across every connection. */
function inTurn(bodies: string[]): autocannon.Request[] {
  let sent = 0
  return [
    {
      setupRequest: (request) => {
        sent += 1
        return { ...request, body: bodies[sent % bodies.length] }
      },
    },
  ]
}

async function run(baseUrl: string, { request, bodies, status }: Workload, duration: number) {
  const { path, ...options } = request
  const result = await autocannon({
    url: `${baseUrl}${path}`,
    connections: CONNECTIONS,
    duration,
    timeout: TIMEOUT,
    ...options,
    ...(bodies && { requests: inTurn(bodies) }),
    ...(path === '/graphql' && { verifyBody: withoutErrors }),
  })
  const counts = Object.entries(result.statusCodeStats ?? {})
  const answered = counts.reduce((sum, [, { count = 0 }]) => sum + count, 0)
  const withStatus = counts.find(([code]) => code === String(status))?.[1].count ?? 0
  const unanswered = withStatus === 0 ? 1 : 0
  return {
    result,
    failures: answered - withStatus + result.errors + result.mismatches + unanswered,
  }
}

/** Warms the server up on the workload, then measures it under CONNECTIONS connections. */
export async function measure(baseUrl: string, workload: Workload): Promise<Measurement> {
  await run(baseUrl, workload, WARMUP)
  const { result, failures } = await run(baseUrl, workload, DURATION)
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p99Ms: result.latency.p99,
    failures,
  }
}
