import { type Client, createClient } from 'graphql-ws'
import WebSocket from 'ws'

export interface FanoutResult {
  subscribers: number
  messages: number
  delivered: number
  /** Messages a subscriber received more than once. */
  duplicates: number
  expected: number
  p50: number
  p99: number
  /** From the first connection to every subscriber hearing a probe. */
  connectedMs: number
}

/** What a group of subscribers has heard so far. */
export interface Hearing {
  /** Subscribers that heard a probe: their subscription is in place. */
  ready: number
  delivered: number
  duplicates: number
}

/** Sockets opened at once: more would only queue behind one another in the handshakes. */
const CONNECTING_AT_ONCE = 500
const PROBE_EVERY_MS = 500
const DELIVERY_WAIT_MS = 60_000

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
/** A clock every process of a run shares, to the microsecond. */
export const now = () => performance.timeOrigin + performance.now()

export const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN

/** A measured message's text carries when it was sent, so any process can time it. */
const measuredText = (index: number) => `m${index}@${now()}`
const sentAtOf = (text: string) => Number(text.slice(text.indexOf('@') + 1))

async function send(baseUrl: string, chatId: string, text: string): Promise<void> {
  const response = await fetch(`${baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      query: `mutation { sendMessage(text: "${text}", author: "bench", chatId: "${chatId}") { id } }`,
    }),
  })
  if (!response.ok) throw new Error(`sendMessage answered ${response.status}`)
}

/**
 * Opens the clients in batches of CONNECTING_AT_ONCE, each batch once the one before is
 * connected, so that a handshake refused for a full backlog does not count as a loss.
 */
async function connected(urls: string[]): Promise<Client[]> {
  const clients: Client[] = []
  for (let start = 0; start < urls.length; start += CONNECTING_AT_ONCE) {
    const batch = urls.slice(start, start + CONNECTING_AT_ONCE).map(
      (url) =>
        new Promise<Client>((resolve, reject) => {
          const client = createClient({
            url,
            webSocketImpl: WebSocket,
            lazy: false,
            retryAttempts: 0,
            on: { connected: () => resolve(client), error: reject },
          })
        }),
    )
    clients.push(...(await Promise.all(batch)))
  }
  return clients
}

/** The WebSocket address of the `index`th subscriber: round-robin over the servers. */
export const subscriberUrl = (baseUrls: string[], index: number) =>
  `${(baseUrls[index % baseUrls.length] as string).replace(/^http/, 'ws')}/graphql`

/**
 * A subscriber of `chatId` on each of `urls`, counting what they hear: probes (any text
 * starting `probe`) tell that a subscription is in place; measured messages are timed.
 */
export async function subscribers(urls: string[], chatId: string) {
  const hearing: Hearing = { ready: 0, delivered: 0, duplicates: 0 }
  const latencies: number[] = []
  const clients = await connected(urls)
  for (const client of clients) {
    const received = new Set<string>()
    let ready = false
    client.subscribe<{ messageAdded: { text: string } }>(
      { query: `subscription { messageAdded(chatId: "${chatId}") { text } }` },
      {
        next: (value) => {
          const text = value.data?.messageAdded.text ?? ''
          if (text.startsWith('probe')) {
            if (!ready) hearing.ready += 1
            ready = true
          } else if (received.has(text)) {
            hearing.duplicates += 1
          } else {
            received.add(text)
            latencies.push(now() - sentAtOf(text))
            hearing.delivered += 1
          }
        },
        error: () => {},
        complete: () => {},
      },
    )
  }
  return {
    hearing: () => ({ ...hearing }),
    latencies: () => latencies,
    close: () => Promise.all(clients.map((client) => client.dispose())),
  }
}

/**
 * Probes until every one of `total` subscribers has heard one: then every subscription
 * is in place, on every instance.
 */
export async function untilEveryoneHears(
  baseUrls: string[],
  chatId: string,
  total: number,
  heard: () => Promise<Hearing>,
): Promise<void> {
  const probingUntil = now() + DELIVERY_WAIT_MS
  for (let probe = 0; (await heard()).ready < total; probe += 1) {
    if (now() > probingUntil) {
      throw new Error(`${total - (await heard()).ready} of ${total} never heard a probe`)
    }
    await send(baseUrls[probe % baseUrls.length] as string, chatId, `probe ${probe}`)
    await sleep(PROBE_EVERY_MS)
  }
}

/**
 * `messages` measured messages, round-robin over the servers, at `ratePerSecond` (as
 * fast as they are answered when absent); then waits until `total` subscribers have each
 * received every one, or DELIVERY_WAIT_MS.
 */
export async function sendMeasured(
  baseUrls: string[],
  chatId: string,
  { total, messages, ratePerSecond }: { total: number; messages: number; ratePerSecond?: number },
  heard: () => Promise<Hearing>,
): Promise<Hearing> {
  for (let index = 0; index < messages; index += 1) {
    const due = now() + (ratePerSecond ? 1000 / ratePerSecond : 0)
    await send(baseUrls[index % baseUrls.length] as string, chatId, measuredText(index))
    await sleep(due - now())
  }
  const deliveredUntil = now() + DELIVERY_WAIT_MS
  while ((await heard()).delivered < total * messages && now() < deliveredUntil) await sleep(20)
  return heard()
}

/** The figures of a run, from what its subscribers heard and their latencies. */
export function fanoutResult(
  { total, messages, connectedMs }: { total: number; messages: number; connectedMs: number },
  { delivered, duplicates }: Hearing,
  latencies: number[],
): FanoutResult {
  const sorted = [...latencies].sort((a, b) => a - b)
  return {
    subscribers: total,
    messages,
    delivered,
    duplicates,
    expected: total * messages,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    connectedMs,
  }
}

/**
 * `total` graphql-ws subscribers in this process, spread over the given servers, all on
 * one chat; then `messages` mutations (see probeThenSend). Latency: send → each delivery.
 */
export async function fanout(
  baseUrls: string[],
  total: number,
  messages: number,
  ratePerSecond?: number,
): Promise<FanoutResult> {
  const chatId = `bench-${Date.now()}`
  const startedAt = now()
  const urls = Array.from({ length: total }, (_, index) => subscriberUrl(baseUrls, index))
  const group = await subscribers(urls, chatId)
  const heard = async () => group.hearing()
  try {
    await untilEveryoneHears(baseUrls, chatId, total, heard)
    const connectedMs = now() - startedAt
    const rate = ratePerSecond ? { ratePerSecond } : {}
    const hearing = await sendMeasured(baseUrls, chatId, { total, messages, ...rate }, heard)
    return fanoutResult({ total, messages, connectedMs }, hearing, group.latencies())
  } finally {
    await group.close()
  }
}
