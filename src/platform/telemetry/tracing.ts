import type { FastifyPluginCallback } from 'fastify'

/** A span that the code which started it ends, with the error that ended its work, if any. */
export type SpanEnd = (error?: unknown) => void

/**
 * What the service asks of tracing, when it is on (see sdk.ts, loaded only then). The
 * modules that make spans depend on this interface alone, so that with tracing off
 * nothing of OpenTelemetry is loaded and each such place costs one absent-dependency
 * check.
 */
export interface Tracing {
  /** @fastify/otel's plugin: a span per request and its route on the HTTP server span. */
  fastifyPlugin: FastifyPluginCallback
  /** A GraphQL operation's span, a child of the active one. */
  startOperation(type: string, name: string | undefined): SpanEnd
  /** A database statement's span, a child of the active one; undefined when there is none. */
  startStatement(text: string): SpanEnd | undefined
  /** The active span's W3C traceparent, for an event to carry to other instances. */
  traceparent(): string | undefined
  /** Handing an event to one subscriber, in the trace of the change that caused it. */
  startDelivery(topic: string, traceparent: string | undefined): SpanEnd
  /** The active span's ids, for a log line. */
  logFields(): { trace_id?: string; span_id?: string }
  /** Exports what is left and stops. */
  shutdown(): Promise<void>
}
