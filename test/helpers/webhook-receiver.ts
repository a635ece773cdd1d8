import { once } from 'node:events'
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One request the receiver got, as it arrived. */
export interface Received {
  path: string
  headers: IncomingHttpHeaders
  body: string
  /** Date.now() when its body had arrived. */
  at: number
}

/** How the receiver answers a request to a path: a status, a redirect, or never. */
export type Answer = number | { redirectTo: string } | 'hang'

/**
 * A receiver of webhooks on 127.0.0.1: it records every request, and answers each path as
 * told, one answer per request in turn (the last one repeating), 200 when told nothing.
 * Requests it leaves hanging are let go by `release` or `close`.
 */
export async function webhookReceiver() {
  const received: Received[] = []
  const answers = new Map<string, Answer[]>()
  const hanging = new Set<ServerResponse>()
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    const path = request.url ?? '/'
    received.push({
      path,
      headers: request.headers,
      body: Buffer.concat(chunks).toString(),
      at: Date.now(),
    })
    const queue = answers.get(path) ?? []
    const answer = (queue.length > 1 ? queue.shift() : queue[0]) ?? 200
    if (answer === 'hang') {
      hanging.add(response)
      response.on('close', () => hanging.delete(response))
    } else if (typeof answer === 'number') {
      response.writeHead(answer).end()
    } else {
      response.writeHead(302, { location: answer.redirectTo }).end()
    }
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    port,
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    /** Answers to the next requests to `path`, in order; the last one repeats. */
    answer(path: string, ...next: Answer[]) {
      answers.set(path, next)
    },
    receivedAt: (path: string) => received.filter((each) => each.path === path),
    /** Requests being left without an answer at this moment. */
    hangingNow: () => hanging.size,
    release() {
      for (const response of hanging) response.writeHead(200).end()
    },
    async close() {
      for (const response of hanging) response.destroy()
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    },
  }
}

export type WebhookReceiver = Awaited<ReturnType<typeof webhookReceiver>>
