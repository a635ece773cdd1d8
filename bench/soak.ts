import { loadavg } from 'node:os'
import autocannon from 'autocannon'
import { type Client, createClient } from 'graphql-ws'
import WebSocket from 'ws'
import { type Hearing, now, percentile, subscriberUrl, untilEveryoneHears } from './fanout.js'
import { BENCH_ADMIN } from './instances.js'
import { type InstanceProcess, startInstanceProcesses } from './processes.js'
import { openBenchDatabase, seedMessages, seedProducts } from './seed.js'

/**
 * `make soak`: SOAK_MINUTES (30) of mixed load on two processes of the compiled service
 * over DATABASE_URL and REDIS_URL, reported minute by minute: HTTP requests at SOAK_RATE
 * per second per instance (REST lists, reads by id, creates; GraphQL queries), messages
 * at SOAK_SEND_RATE per second over SOAK_CHATS chats, each followed by SOAK_SUBSCRIBERS
 * subscribers in all, a tenth of whom leave every minute and resume on the other
 * instance after the last id they heard. At the end every subscriber must have heard
 * every answered message of its chat once and in order, and no request may have failed.
 */
const MINUTES = Number(process.env.SOAK_MINUTES ?? 30)
const RATE = Number(process.env.SOAK_RATE ?? 150)
const SEND_RATE = Number(process.env.SOAK_SEND_RATE ?? 10)
const CHATS = Number(process.env.SOAK_CHATS ?? 10)
const SUBSCRIBERS = Number(process.env.SOAK_SUBSCRIBERS ?? 200)
const PRODUCTS = 10_000
const CHURN = 0.1
const MINUTE_S = 60

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const json = { 'content-type': 'application/json' }
const graphqlBody = (query: string, variables = {}) => JSON.stringify({ query, variables })

/** One request of each kind in turn, on every connection: reads, a write, GraphQL. */
function mixedRequests(token: string): autocannon.Request[] {
  const randomId = () => 1 + Math.floor(Math.random() * PRODUCTS)
  return [
    { method: 'GET', path: '/products' },
    { method: 'GET', path: '/products?category=category-7&minPrice=100&maxPrice=600&page=2' },
    { method: 'GET', setupRequest: (request) => ({ ...request, path: `/products/${randomId()}` }) },
    {
      method: 'POST',
      path: '/graphql',
      headers: json,
      body: graphqlBody('{ products(limit: 20) { id name price } }'),
    },
    {
      method: 'POST',
      path: '/graphql',
      headers: json,
      body: graphqlBody('{ messages(limit: 20) { id text author createdAt } }'),
    },
    {
      method: 'POST',
      path: '/products',
      headers: { ...json, authorization: `Bearer ${token}` },
      body: JSON.stringify({ name: 'Soak lamp', price: 9.99, category: 'soak' }),
    },
  ]
}

interface HttpMinute {
  requests: number
  p99: number
  errors: number
}

/** A minute of the mixed requests against one instance, at RATE per second. */
async function httpMinute(url: string, token: string): Promise<HttpMinute> {
  const result = await autocannon({
    url,
    connections: 8,
    overallRate: RATE,
    duration: MINUTE_S,
    timeout: 10,
    requests: mixedRequests(token),
  })
  return {
    requests: result.requests.total,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
  }
}

/** A subscriber that lives the whole soak, over as many sockets as churn gives it. */
interface Subscriber {
  chatId: string
  client?: Client
  /** The last message id heard: where a new socket resumes. */
  lastId: number
  heard: Set<number>
  duplicates: number
  outOfOrder: number
  ready: boolean
}

const MESSAGE_ADDED = `subscription ($chatId: ID, $after: ID) {
  messageAdded(chatId: $chatId, after: $after) { id text }
}`

/**
 * The chats' side of the soak: subscribers, their churn, and the messages sent to them,
 * with what each minute delivered and how long deliveries took.
 */
function chatTraffic(baseUrls: string[]) {
  const chats = Array.from({ length: CHATS }, (_, index) => `soak-${Date.now()}-${index}`)
  const subscribers: Subscriber[] = Array.from({ length: SUBSCRIBERS }, (_, index) => ({
    chatId: chats[index % CHATS] as string,
    lastId: 0,
    heard: new Set(),
    duplicates: 0,
    outOfOrder: 0,
    ready: false,
  }))
  const answered = new Map<string, number[]>(chats.map((chat) => [chat, []]))
  const minute = { delivered: 0, latencies: [] as number[], sent: 0, failed: 0 }
  let sockets = 0

  function heard(subscriber: Subscriber, id: number, text: string) {
    if (subscriber.heard.has(id)) subscriber.duplicates += 1
    else if (id < subscriber.lastId) subscriber.outOfOrder += 1
    subscriber.heard.add(id)
    subscriber.lastId = Math.max(subscriber.lastId, id)
    if (text.startsWith('probe')) subscriber.ready = true
    else {
      minute.delivered += 1
      minute.latencies.push(now() - Number(text.slice(text.indexOf('@') + 1)))
    }
  }

  function connect(subscriber: Subscriber) {
    const client = createClient({
      url: subscriberUrl(baseUrls, sockets++),
      webSocketImpl: WebSocket,
      retryAttempts: 0,
    })
    subscriber.client = client
    const after = subscriber.lastId > 0 ? { after: String(subscriber.lastId) } : {}
    client.subscribe<{ messageAdded: { id: string; text: string } }>(
      { query: MESSAGE_ADDED, variables: { chatId: subscriber.chatId, ...after } },
      {
        // What the socket it left still delivers while closing is not heard: a client
        // that has moved on has done with it.
        next: ({ data }) => {
          if (data && subscriber.client === client)
            heard(subscriber, Number(data.messageAdded.id), data.messageAdded.text)
        },
        error: () => {
          minute.failed += 1
        },
        complete: () => {},
      },
    )
  }

  async function sendOne(index: number) {
    const chatId = chats[index % CHATS] as string
    const response = await fetch(`${baseUrls[index % baseUrls.length]}/graphql`, {
      method: 'POST',
      headers: json,
      body: graphqlBody(
        'mutation ($chatId: ID!, $text: String!) { sendMessage(chatId: $chatId, text: $text, author: "soak") { id } }',
        { chatId, text: `s${index}@${now()}` },
      ),
    }).catch(() => undefined)
    const body = (await response?.json().catch(() => undefined)) as
      | { data?: { sendMessage?: { id: string } } }
      | undefined
    const id = body?.data?.sendMessage?.id
    if (id) answered.get(chatId)?.push(Number(id))
    else minute.failed += 1
    minute.sent += 1
  }

  let sending: NodeJS.Timeout | undefined
  return {
    chats,
    subscribers,
    async subscribeAll() {
      for (const subscriber of subscribers) connect(subscriber)
      for (const chatId of chats) {
        const ofChat = subscribers.filter((subscriber) => subscriber.chatId === chatId)
        const hearing = async (): Promise<Hearing> => ({
          ready: ofChat.filter((subscriber) => subscriber.ready).length,
          delivered: 0,
          duplicates: 0,
        })
        await untilEveryoneHears(baseUrls, chatId, ofChat.length, hearing)
      }
    },
    startSending() {
      let index = 0
      sending = setInterval(() => void sendOne(index++), 1000 / SEND_RATE)
    },
    stopSending: () => clearInterval(sending),
    /** A tenth of the subscribers leave and come back on another socket, after their last id. */
    churn() {
      for (const subscriber of subscribers) {
        if (Math.random() >= CHURN) continue
        void subscriber.client?.dispose()
        connect(subscriber)
      }
    },
    /** What the minute just ended delivered, sent and failed; counting starts again. */
    takeMinute() {
      const taken = { ...minute, latencies: minute.latencies.sort((a, b) => a - b) }
      Object.assign(minute, { delivered: 0, latencies: [], sent: 0, failed: 0 })
      return taken
    },
    /** Answered messages some subscriber of their chat has not heard. */
    lost() {
      return subscribers.reduce(
        (sum, subscriber) =>
          sum +
          (answered.get(subscriber.chatId) ?? []).filter((id) => !subscriber.heard.has(id)).length,
        0,
      )
    },
    answeredCount: () => [...answered.values()].reduce((sum, ids) => sum + ids.length, 0),
    close: () => Promise.all(subscribers.map((subscriber) => subscriber.client?.dispose())),
  }
}

async function adminToken(url: string): Promise<string> {
  const login = await fetch(`${url}/auth/login`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify(BENCH_ADMIN),
  })
  return ((await login.json()) as { data: { accessToken: string } }).data.accessToken
}

const cells = (values: (string | number)[]) => console.log(`| ${values.join(' | ')} |`)
const mib = (size: number) => size.toFixed(1)

async function soak(instances: InstanceProcess[]) {
  const baseUrls = instances.map((instance) => instance.url)
  const chat = chatTraffic(baseUrls)
  await chat.subscribeAll()
  chat.startSending()
  const columns = [
    ...['minute', 'HTTP requests', 'HTTP p99 ms', 'HTTP errors', 'messages', 'deliveries'],
    ...['delivery p99 ms', 'chat errors'],
    ...instances.map((_, index) => `RSS ${index + 1} MiB`),
    'load (1 min)',
  ]
  cells(columns)
  cells(columns.map(() => '---:'))
  const sizes: number[][] = []
  let errors = 0
  for (let minute = 1; minute <= MINUTES; minute += 1) {
    // A token of its own each minute: one would expire (ACCESS_TOKEN_TTL) mid-soak.
    const token = await adminToken(baseUrls[0] as string)
    const http = await Promise.all(baseUrls.map((url) => httpMinute(url, token)))
    chat.churn()
    const taken = chat.takeMinute()
    const resident = await Promise.all(instances.map((instance) => instance.residentMiB()))
    sizes.push(resident)
    const httpErrors = http.reduce((sum, each) => sum + each.errors, 0)
    errors += httpErrors + taken.failed
    cells([
      minute,
      http.reduce((sum, each) => sum + each.requests, 0),
      Math.max(...http.map((each) => each.p99)),
      httpErrors,
      taken.sent,
      taken.delivered,
      percentile(taken.latencies, 99).toFixed(0),
      taken.failed,
      ...resident.map(mib),
      (loadavg()[0] as number).toFixed(1),
    ])
  }
  chat.stopSending()
  await sleep(10_000)
  const lost = chat.lost()
  const duplicates = chat.subscribers.reduce((sum, each) => sum + each.duplicates, 0)
  const outOfOrder = chat.subscribers.reduce((sum, each) => sum + each.outOfOrder, 0)
  await chat.close()
  return { sizes, errors, lost, duplicates, outOfOrder, answered: chat.answeredCount() }
}

/**
 * Growth of each instance's resident size from the middle third of the soak to the last
 * third (their means): what settles shows about 0; what leaks grows with the minutes.
 */
function growth(sizes: number[][]): number[] {
  const third = Math.floor(sizes.length / 3)
  if (third === 0) return []
  const mean = (rows: number[][], index: number) =>
    rows.reduce((sum, row) => sum + (row[index] as number), 0) / rows.length
  const middle = sizes.slice(third, 2 * third)
  const last = sizes.slice(2 * third)
  return (sizes[0] ?? []).map((_, index) => mean(last, index) / mean(middle, index) - 1)
}

/** What the soak allows a settled instance to grow from its middle third to its last. */
const MAX_GROWTH = 0.1

const database = await openBenchDatabase()
await seedProducts(database.db, PRODUCTS)
await seedMessages(database.db, 1000)
await database.close()
const instances = await startInstanceProcesses(2)
let failed = true
try {
  const result = await soak(instances)
  const grown = growth(result.sizes)
  console.log(
    `\n${MINUTES} minutes: ${result.errors} errors; ${result.answered} messages answered, ` +
      `${result.lost} deliveries lost, ${result.duplicates} repeated, ${result.outOfOrder} out of order; ` +
      `resident size, last third against middle third: ${grown.map((each) => `${(each * 100).toFixed(1)}%`).join(' · ') || 'too short to tell'}`,
  )
  failed =
    result.errors + result.lost + result.duplicates + result.outOfOrder > 0 ||
    grown.some((each) => each > MAX_GROWTH)
} finally {
  await Promise.all(instances.map((instance) => instance.stop()))
}
if (failed) {
  console.error(`the soak failed: errors, lost deliveries, or growth over ${MAX_GROWTH * 100}%`)
  process.exit(1)
}
