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
    ...options,
    ...(bodies && { requests: inTurn(bodies) }),
    ...(path === '/graphql' && { verifyBody: withoutErrors }),
  })
  const counts = Object.entries(result.statusCodeStats ?? {})
  const answered = counts.reduce((sum, [, { count = 0 }]) => sum + count, 0)
  const withStatus = counts.find(([code]) => code === String(status))?.[1].count ?? 0
  return { result, failures: answered - withStatus + result.errors + result.mismatches }
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
