import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { register } from 'node:module'
import { join } from 'node:path'
import { FastifyOtelInstrumentation } from '@fastify/otel'
import {
  type Context,
  context,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api'
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { registerInstrumentations } from '@opentelemetry/instrumentation'
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http'
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis'
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources'
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import type { TracesProtocol } from '../../config.js'
import { projectRoot } from '../../paths.js'
import type { SpanEnd, Tracing } from './tracing.js'

/**
 * The packages whose exports the instrumentations patch and the service imports as ES
 * modules: import-in-the-middle wraps only these. Node's own http, which Fastify
 * requires, is patched through require.
 */
const IMPORTS_PATCHED = ['ioredis']

/**
 * Starts OpenTelemetry's tracing SDK: call it before the modules it instruments are
 * loaded (server.ts imports them afterwards). The exporter, its endpoint, headers and
 * batching, the sampler and the resource's attributes come from the OTEL_* variables,
 * which the SDK reads itself; config.ts has checked the ones it would fail on obscurely.
 */
export function startTracing({ protocol }: { protocol: TracesProtocol }): Tracing {
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url, {
    data: { include: IMPORTS_PATCHED },
  })
  const exporter = protocol === 'http/json' ? new JsonExporter() : new ProtobufExporter()
  const provider = new NodeTracerProvider({
    resource: serviceResource(),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  })
  // The W3C trace context (and baggage) propagators, as OTEL_PROPAGATORS defaults to.
  provider.register()
  // A span per request and one for its handler; one per hook of every plugin would be
  // a dozen more per request.
  const fastify = new FastifyOtelInstrumentation({ instrumentHooks: false })
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [new HttpInstrumentation(), new IORedisInstrumentation(), fastify],
  })
  const tracer = provider.getTracer(packageOf().name, packageOf().version)
  return {
    fastifyPlugin: fastify.plugin(),
    startOperation: (type, name) =>
      ended(
        tracer.startSpan(name ? `${type} ${name}` : type, {
          attributes: {
            'graphql.operation.type': type,
            ...(name && { 'graphql.operation.name': name }),
          },
        }),
      ),
    startStatement(text) {
      if (!trace.getActiveSpan()) return undefined
      const operation = /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase()
      const span = tracer.startSpan(operation ?? 'postgresql', {
        kind: SpanKind.CLIENT,
        attributes: {
          // The names before and after the database conventions became stable (1.33).
          'db.system': 'postgresql',
          'db.system.name': 'postgresql',
          'db.statement': text,
          'db.query.text': text,
          ...(operation && { 'db.operation.name': operation }),
        },
      })
      return ended(span)
    },
    traceparent() {
      const carrier: { traceparent?: string } = {}
      propagation.inject(context.active(), carrier)
      return carrier.traceparent
    },
    startDelivery: (topic, traceparent) =>
      ended(
        tracer.startSpan(
          'process event',
          {
            kind: SpanKind.CONSUMER,
            attributes: {
              'messaging.system': 'mqemitter',
              'messaging.operation.type': 'process',
              'messaging.destination.name': topic,
            },
          },
          senderContext(traceparent),
        ),
      ),
    logFields() {
      const span = trace.getActiveSpan()
      if (!span) return {}
      const { traceId, spanId } = span.spanContext()
      return { trace_id: traceId, span_id: spanId }
    },
    shutdown: () => provider.shutdown(),
  }
}

/** The trace an event was sent in; a fresh root when it carries none (or a malformed one). */
function senderContext(traceparent: string | undefined): Context {
  if (!traceparent) return trace.deleteSpan(context.active())
  return propagation.extract(trace.deleteSpan(context.active()), { traceparent })
}

function ended(span: Span): SpanEnd {
  return (error) => {
    if (error !== undefined) {
      span.recordException(error as Error)
      span.setStatus({ code: SpanStatusCode.ERROR })
    }
    span.end()
  }
}

/**
 * The SDK's defaults, then the package's name (OTEL_SERVICE_NAME's default here) and an
 * id for this process, so that each instance's spans tell it apart, then what
 * OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES say, which wins.
 */
function serviceResource() {
  const { name, version } = packageOf()
  return defaultResource()
    .merge(
      resourceFromAttributes({
        'service.name': name,
        'service.version': version,
        'service.instance.id': randomUUID(),
      }),
    )
    .merge(detectResources({ detectors: [envDetector] }))
}

let packageJson: { name: string; version: string } | undefined
function packageOf() {
  packageJson ??= JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as {
    name: string
    version: string
  }
  return packageJson
}
