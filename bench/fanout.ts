import { createClient } from 'graphql-ws'
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
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN

/**
 * `subscribers` graphql-ws clients spread over the given servers, all on one chat; then
 * `messages` mutations, round-robin over the servers. Latency: send → each delivery.
 */
export async function fanout(
  baseUrls: string[],
  subscribers: number,
  messages: number,
  waitForSubscriptions: (count: number) => Promise<void>,
): Promise<FanoutResult> {
  const chatId = `bench-${Date.now()}`
  const sentAt = new Map<string, number>()
  const latencies: number[] = []
  let delivered = 0
  let duplicates = 0
  const clients = Array.from({ length: subscribers }, (_, index) =>
    createClient({
      url: `${(baseUrls[index % baseUrls.length] as string).replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
    }),
  )
  const done = new Promise<void>((resolve) => {
    for (const client of clients) {
      const received = new Set<string>()
      client.subscribe<{ messageAdded: { text: string } }>(
        { query: `subscription { messageAdded(chatId: "${chatId}") { text } }` },
        {
          next: (value) => {
            const text = value.data?.messageAdded.text ?? ''
            if (received.has(text)) {
              duplicates += 1
              return
            }
            received.add(text)
            latencies.push(performance.now() - (sentAt.get(text) ?? performance.now()))
            delivered += 1
            if (delivered === subscribers * messages) resolve()
          },
          error: () => {},
          complete: () => {},
        },
      )
    }
  })
  await waitForSubscriptions(subscribers)
  for (let index = 0; index < messages; index += 1) {
    const text = `m${index}`
    sentAt.set(text, performance.now())
    await fetch(`${baseUrls[index % baseUrls.length]}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query: `mutation { sendMessage(text: "${text}", author: "bench", chatId: "${chatId}") { id } }`,
      }),
    })
  }
  await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 30_000))])
  await Promise.all(clients.map((client) => client.dispose()))
  latencies.sort((a, b) => a - b)
  return {
    subscribers,
    messages,
    delivered,
    duplicates,
    expected: subscribers * messages,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  }
}
