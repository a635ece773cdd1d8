import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

type AnyValue = { stringValue?: string; intValue?: number | string; boolValue?: boolean }
type KeyValue = { key: string; value: AnyValue }

/** A span as OTLP/HTTP JSON carries it, with its resource's attributes beside it. */
export interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes: Record<string, string | number | boolean | undefined>
  resource: Record<string, string | number | boolean | undefined>
}

const plainValue = ({ stringValue, intValue, boolValue }: AnyValue) =>
  stringValue ?? (intValue === undefined ? boolValue : Number(intValue))
const attributesOf = (list: KeyValue[] = []) =>
  Object.fromEntries(list.map(({ key, value }) => [key, plainValue(value)]))

interface ExportRequest {
  resourceSpans: {
    resource?: { attributes?: KeyValue[] }
    scopeSpans: {
      spans?: (Omit<ReceivedSpan, 'attributes' | 'resource'> & { attributes?: KeyValue[] })[]
    }[]
  }[]
}

/**
 * An OTLP/HTTP receiver on a free port, as a collector would be: it takes `POST
 * /v1/traces` in JSON (decoded into `spans`) or protobuf (kept as bytes in `protobuf`).
 */
export async function startOtlpReceiver() {
  const spans: ReceivedSpan[] = []
  const protobuf: Buffer[] = []
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    const body = Buffer.concat(chunks)
    if (request.method !== 'POST' || request.url !== '/v1/traces') {
      response.writeHead(404).end()
      return
    }
    if (String(request.headers['content-type']).includes('protobuf')) {
      protobuf.push(body)
      response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
      return
    }
    for (const { resource, scopeSpans } of (JSON.parse(String(body)) as ExportRequest)
      .resourceSpans) {
      for (const { spans: received = [] } of scopeSpans) {
        for (const span of received) {
          spans.push({
            ...span,
            attributes: attributesOf(span.attributes),
            resource: attributesOf(resource?.attributes),
          })
        }
      }
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  /** The spans of one trace, waiting until `until` holds of them (batches arrive late). */
  async function trace(traceId: string, until: (spans: ReceivedSpan[]) => boolean, ms = 10_000) {
    const deadline = Date.now() + ms
    for (;;) {
      const found = spans.filter((span) => span.traceId === traceId)
      if (until(found)) return found
      if (Date.now() > deadline) {
        throw new Error(`trace ${traceId} incomplete: ${found.map((span) => span.name).join(', ')}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  return { url, spans, protobuf, trace, close: () => server.close() }
}
