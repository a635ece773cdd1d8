import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtemp, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends, type TestDatabase } from './helpers/backends.js'
import { collect, wsClient } from './helpers/graphql.js'
import { type ReceivedSpan, startOtlpReceiver } from './helpers/otlp-receiver.js'
import { redisUrl } from './helpers/redis.js'
import { startedProcess, stopProcesses } from './helpers/server-process.js'

const SERVER = 2
const newId = (bytes: number) => randomBytes(bytes).toString('hex')
const traceparentOf = (traceId: string, spanId: string) => `00-${traceId}-${spanId}-01`

/** A request with a traceparent, and JSON in and out. */
async function traced(url: string, traceparent: string, body?: unknown) {
  const response = await fetch(url, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { traceparent, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  })
  return { status: response.status, body: (await response.json()) as Record<string, any> }
}

const named = (spans: ReceivedSpan[], test: (span: ReceivedSpan) => boolean) =>
  spans.find(test) as ReceivedSpan
const serverSpan = (spans: ReceivedSpan[]) => named(spans, (span) => span.kind === SERVER)
const hasServerAndStatement = (spans: ReceivedSpan[]) =>
  spans.some((span) => span.kind === SERVER) &&
  spans.some((span) => span.attributes['db.system'] === 'postgresql')

/** Waits for the JSON log line that `test` picks (lines are written in batches). */
async function logLine(lines: () => string[], test: (line: Record<string, any>) => boolean) {
  const deadline = Date.now() + 5000
  for (;;) {
    const found = lines()
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, any>)
      .find(test)
    if (found) return found
    if (Date.now() > deadline) throw new Error('no such log line')
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe.each(backends)('tracing on $name', (backend) => {
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>
  let server: Awaited<ReturnType<typeof startedProcess>>
  let testDatabase: TestDatabase | undefined
  const redisKeyPrefix = `tracing-${newId(4)}:`

  beforeAll(async () => {
    receiver = await startOtlpReceiver()
    testDatabase = backend.name === 'postgres' ? await backend.open() : undefined
    server = await startedProcess({
      LOG_FORMAT: 'json',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '50',
      ...(testDatabase?.url && { DATABASE_URL: testDatabase.url }),
      ...(redisUrl && { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: redisKeyPrefix }),
    })
  })
  afterAll(async () => {
    await stopProcesses()
    await testDatabase?.drop()
    receiver?.close()
  })

  it('continues the traceparent of a REST request, with its route, status and statement', async () => {
    const [traceId, parentId] = [newId(16), newId(8)]
    const response = await traced(`${server.baseUrl}/products`, traceparentOf(traceId, parentId))
    expect(response.status).toBe(200)

    const spans = await receiver.trace(traceId, hasServerAndStatement)
    expect(serverSpan(spans)).toMatchObject({
      parentSpanId: parentId,
      attributes: {
        'http.request.method': 'GET',
        'http.route': '/products',
        'http.response.status_code': 200,
      },
    })
    const statement = named(spans, (span) => span.attributes['db.system'] === 'postgresql')
    expect(statement.attributes).toMatchObject({ 'db.system.name': 'postgresql' })
    expect(statement.attributes['db.query.text']).toContain('from "products"')
  })

  it('gives a GraphQL operation its span, and its statements their text without values', async () => {
    const [traceId, parentId] = [newId(16), newId(8)]
    const secret = `secret-${newId(6)}`
    const response = await traced(`${server.baseUrl}/graphql`, traceparentOf(traceId, parentId), {
      query: 'mutation Post($text: String!) { sendMessage(text: $text, author: "me") { id } }',
      variables: { text: secret },
    })
    expect(response.body.errors).toBeUndefined()

    const spans = await receiver.trace(
      traceId,
      (found) =>
        hasServerAndStatement(found) &&
        found.some((span) => span.attributes['graphql.operation.type']) &&
        (!redisUrl || found.some((span) => span.attributes['db.system.name'] === 'redis')),
    )
    expect(serverSpan(spans)).toMatchObject({
      parentSpanId: parentId,
      attributes: { 'http.request.method': 'POST', 'http.route': '/graphql' },
    })
    expect(named(spans, (span) => span.name === 'mutation Post').attributes).toMatchObject({
      'graphql.operation.type': 'mutation',
      'graphql.operation.name': 'Post',
    })
    const insert = named(spans, (span) =>
      String(span.attributes['db.query.text']).includes('insert into "messages"'),
    )
    expect(insert.attributes['db.query.text']).toContain('$1')
    expect(JSON.stringify(spans)).not.toContain(secret)
    if (redisUrl) {
      expect(named(spans, (span) => span.name === 'publish').attributes).toMatchObject({
        'db.system.name': 'redis',
      })
    }
  })

  it('writes the trace and span ids of a request on its log line', async () => {
    const [traceId, parentId] = [newId(16), newId(8)]
    await traced(`${server.baseUrl}/products?page=2`, traceparentOf(traceId, parentId))
    const line = await logLine(server.lines, (line) => line.req?.url === '/products?page=2')
    const spans = await receiver.trace(traceId, hasServerAndStatement)
    expect(line.trace_id).toBe(traceId)
    expect(spans.map((span) => span.spanId)).toContain(line.span_id)
  })

  it('serves a request whose traceparent is malformed, in a trace of its own', async () => {
    const malformed = `00-${newId(16)}-not-a-span-id-01`
    const response = await traced(`${server.baseUrl}/products?page=3`, malformed)
    expect(response.status).toBe(200)
    const line = await logLine(server.lines, (line) => line.req?.url === '/products?page=3')
    const spans = await receiver.trace(line.trace_id, hasServerAndStatement)
    expect(line.trace_id).not.toBe(malformed.split('-')[1])
    expect(serverSpan(spans).parentSpanId).toBeUndefined()
  })
})

const postgres = backends.find((backend) => backend.name === 'postgres')

describe.runIf(postgres && redisUrl)('one trace across two instances', () => {
  afterAll(stopProcesses)

  it("delivers on B, in the sender's trace, an event sent on A", async () => {
    const receiver = await startOtlpReceiver()
    const testDatabase = await (postgres as NonNullable<typeof postgres>).open()
    const environment = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '50',
      DATABASE_URL: testDatabase.url as string,
      REDIS_URL: redisUrl as string,
      REDIS_KEY_PREFIX: testDatabase.redisKeyPrefix,
    }
    const [a, b] = await Promise.all([startedProcess(environment), startedProcess(environment)])
    const chatId = `traced-${newId(4)}`
    const client = wsClient(b.baseUrl)
    const stream = collect(
      client,
      `subscription Watch { messageAdded(chatId: "${chatId}") { text } }`,
    )
    // The subscription's span ends once its topic is subscribed to, on Redis too.
    await until(() =>
      receiver.spans.some((span) => span.attributes['graphql.operation.name'] === 'Watch'),
    )

    const [traceId, parentId] = [newId(16), newId(8)]
    const sent = await traced(`${a.baseUrl}/graphql`, traceparentOf(traceId, parentId), {
      query: `mutation Send { sendMessage(text: "traced", author: "a", chatId: "${chatId}") { id } }`,
    })
    expect(sent.body.errors).toBeUndefined()
    await stream.until(1)
    const isDelivery = (span: ReceivedSpan) => span.name === 'process event'
    // Each instance exports in its own batches: wait for B's delivery and every one of
    // A's spans above it, up to the request's own parent.
    const spans = await receiver.trace(traceId, (found) => {
      const delivery = found.find(isDelivery)
      return (
        delivery !== undefined && ancestorsOf(delivery, found).at(-1)?.parentSpanId === parentId
      )
    })
    console.log(`the trace across two instances: ${spans.map((span) => span.name).join(', ')}`)

    const delivery = named(spans, isDelivery)
    const sender = serverSpan(spans)
    expect(sender.parentSpanId).toBe(parentId)
    expect(delivery.resource['service.instance.id']).not.toBe(
      sender.resource['service.instance.id'],
    )
    expect(delivery.attributes['messaging.destination.name']).toBe(`chat/${chatId}/messageAdded`)
    const ancestors = ancestorsOf(delivery, spans)
    expect(ancestors.at(-1)).toBe(sender)
    for (const ancestor of ancestors) {
      expect(ancestor.resource['service.instance.id']).toBe(sender.resource['service.instance.id'])
    }
    await client.dispose()
    await stopProcesses()
    await testDatabase.drop()
    receiver.close()
  })
})

/** The spans above `span` in `spans`, its parent first, as far as the chain is there. */
function ancestorsOf(span: ReceivedSpan, spans: ReceivedSpan[]): ReceivedSpan[] {
  const byId = new Map(spans.map((each) => [each.spanId, each]))
  const ancestors: ReceivedSpan[] = []
  for (let parent = byId.get(span.parentSpanId as string); parent; ) {
    ancestors.push(parent)
    parent = byId.get(parent.parentSpanId as string)
  }
  return ancestors
}

async function until(condition: () => boolean, ms = 10_000) {
  const deadline = Date.now() + ms
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('waited in vain')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe('tracing over OTLP/HTTP protobuf', () => {
  afterAll(stopProcesses)

  it('exports the spans of a request', async () => {
    const receiver = await startOtlpReceiver()
    const server = await startedProcess({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
      OTEL_BSP_SCHEDULE_DELAY: '50',
    })
    const [traceId, parentId] = [newId(16), newId(8)]
    await traced(`${server.baseUrl}/products`, traceparentOf(traceId, parentId))
    const traceIdBytes = Buffer.from(traceId, 'hex')
    const deadline = Date.now() + 10_000
    while (!receiver.protobuf.some((body) => body.includes(traceIdBytes))) {
      if (Date.now() > deadline) throw new Error('no protobuf export with the trace id')
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const body = receiver.protobuf.find((each) => each.includes(traceIdBytes)) as Buffer
    expect(body.includes(Buffer.from(parentId, 'hex'))).toBe(true)
    expect(body.includes('/products')).toBe(true)
    receiver.close()
  })
})

describe('tracing off', () => {
  afterAll(stopProcesses)

  it('loads nothing of OpenTelemetry', async () => {
    const log = join(await mkdtemp(join(tmpdir(), 'module-log-')), 'modules')
    const hook = fileURLToPath(new URL('./fixtures/module-log.mjs', import.meta.url))
    const server = await startedProcess({ NODE_OPTIONS: `--import ${hook}`, MODULE_LOG: log })
    expect((await fetch(`${server.baseUrl}/products`)).status).toBe(200)
    const answer = await traced(`${server.baseUrl}/graphql`, 'ignored', {
      query: '{ messages { id } }',
    })
    expect(answer.body.errors).toBeUndefined()
    await stopped(server.child)

    const modules = await readFile(log, 'utf8')
    // The log sees the packages the server does load, by import and by require alike.
    expect(modules).toMatch(/node_modules\/fastify\//)
    expect(modules).toMatch(/node_modules\/mercurius\//)
    // Nothing imported as an ES module, which is how the service would load the SDK, and
    // nothing required but the API, which prom-client requires for its exemplars.
    expect(modules).not.toMatch(/^file:.*(@opentelemetry|@fastify\/otel|import-in-the-middle)/m)
    expect(modules).not.toMatch(/@opentelemetry\/(?!api\/)|@fastify\/otel|import-in-the-middle/)
  })
})

async function stopped(child: ChildProcess) {
  child.kill('SIGTERM')
  await once(child, 'exit')
}
