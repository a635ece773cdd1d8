import WebSocket from 'ws'
import { benchInstances } from './instances.js'
import { openBenchDatabase } from './seed.js'

const ACCOUNTS = Number(process.env.ACCOUNTS ?? 50)
const PROTOCOLS = ['graphql-transport-ws', 'graphql-ws']
const FORBIDDEN = 4403

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN

const post = (url: string, path: string, body: unknown, token?: string) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: {
      ...(body !== undefined && { 'content-type': 'application/json' }),
      ...(token && { authorization: `Bearer ${token}` }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  })

/** A signed-up account's access token. */
async function accountToken(url: string, index: number): Promise<string> {
  const credentials = {
    email: `revoked-${Date.now()}-${index}@example.com`,
    password: 'pw-123456789',
  }
  await post(url, '/users', { name: `Revoked ${index}`, ...credentials })
  const login = await post(url, '/auth/login', credentials)
  return ((await login.json()) as { data: { accessToken: string } }).data.accessToken
}

/**
 * A socket of the account, acknowledged and following a chat, and its close to come
 * (wrapped: an async function returning the promise itself would wait for the close).
 */
async function subscribedSocket(url: string, protocol: string, token: string) {
  const socket = new WebSocket(`${url.replace(/^http/, 'ws')}/graphql`, protocol)
  const closed = new Promise<{ code: number; at: number }>((resolve) =>
    socket.on('close', (code) => resolve({ code, at: performance.now() })),
  )
  await new Promise((resolve) => socket.once('open', resolve))
  const acknowledged = new Promise((resolve) => socket.once('message', resolve))
  socket.send(JSON.stringify({ type: 'connection_init', payload: { authToken: token } }))
  await acknowledged
  socket.send(
    JSON.stringify({
      id: '1',
      type: protocol === 'graphql-transport-ws' ? 'subscribe' : 'start',
      payload: { query: 'subscription { messageAdded(chatId: "revocation") { id } }' },
    }),
  )
  return { closed }
}

/**
 * `BENCH_REVOCATION=1 make bench`: for ACCOUNTS accounts, each with a socket in each
 * subprotocol on each of two instances (through Redis when REDIS_URL is set), the time
 * from a logout-all sent to the first instance to the last of its sockets closed (4403).
 */
export async function revocationTime(): Promise<number> {
  const database = await openBenchDatabase()
  const startInstance = benchInstances(database)
  const instances = [await startInstance(), await startInstance()]
  const [first] = instances as [(typeof instances)[number]]
  const times: number[] = []
  let wrongCodes = 0
  for (let index = 0; index < ACCOUNTS; index += 1) {
    const token = await accountToken(first.url, index)
    const sockets = await Promise.all(
      instances.flatMap(({ url }) =>
        PROTOCOLS.map((protocol) => subscribedSocket(url, protocol, token)),
      ),
    )
    const sentAt = performance.now()
    const answer = await post(first.url, '/auth/logout-all', undefined, token)
    if (answer.status !== 204) throw new Error(`logout-all answered ${answer.status}`)
    const closed = await Promise.all(sockets.map((socket) => socket.closed))
    wrongCodes += closed.filter(({ code }) => code !== FORBIDDEN).length
    times.push(Math.max(...closed.map(({ at }) => at)) - sentAt)
  }
  for (const { app } of instances) await app.close()
  await database.close()
  const sorted = [...times].sort((a, b) => a - b)
  const ms = (value: number) => `${value.toFixed(1)} ms`
  console.log(
    `logout-all → last of 4 sockets closed on 2 instances (${process.env.REDIS_URL ? 'Redis' : 'one process'}), ${ACCOUNTS} accounts:`,
    `p50 ${ms(percentile(sorted, 50))}, p99 ${ms(percentile(sorted, 99))}, max ${ms(sorted.at(-1) ?? Number.NaN)};`,
    `closes with another code than 4403: ${wrongCodes}`,
  )
  return wrongCodes > 0 ? 1 : 0
}
