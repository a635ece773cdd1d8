import {
  type FastifyBaseLogger,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify'
import type { Bindings, ChildLoggerOptions } from 'pino'

/**
 * One line per request, when it is answered, instead of Fastify's two (one on arrival,
 * one on completion), with the same facts: the method and path are on the one line.
 * It is written by the server's logger, with the request id among the facts, so that a
 * request whose handler logs nothing never needs a logger of its own (see
 * requestLoggerFactory). It goes through pino's ordinary log method, so everything the
 * logger is configured with (serializers, formatters, a mixin, redaction, hooks) applies
 * to it; why not a faster line of our own: docs/decisions/logging.md.
 */
export class RequestLog extends LogController {
  override incomingRequest() {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply) {
    if (this.isLogDisabled(request)) return
    const log = request.server.log
    const facts = {
      [this.requestIdLogLabel]: request.id,
      // Written by Fastify's serializers: { method, url, version, host, remoteAddress,
      // remotePort } and { statusCode }.
      req: request,
      res: reply,
      responseTime: toMicroseconds(reply.elapsedTime),
    }
    if (error) log.error({ ...facts, err: error }, 'request errored')
    else log.info(facts, 'request completed')
  }
}

/** A duration in milliseconds, rounded to the microsecond: finer is noise. */
const toMicroseconds = (milliseconds: number) => Math.round(milliseconds * 1000) / 1000

/**
 * Fastify's `childLoggerFactory`: each request's logger (with its request id) is made
 * when the request first logs. Making pino's child up front, its log methods rebound and
 * its bindings serialized, was 2% of the CPU of a request that then logged nothing else.
 */
export function requestLoggerFactory(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  // A route's own level or serializers need the real child at once.
  for (const _ in options) return logger.child(bindings, options)
  return new RequestLogger(logger, bindings) as unknown as FastifyBaseLogger
}

/** The methods a request's logger forwards, each to the logger made on its first call. */
const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

class RequestLogger {
  #parent: FastifyBaseLogger
  #bindings: Bindings
  #made: FastifyBaseLogger | undefined

  constructor(parent: FastifyBaseLogger, bindings: Bindings) {
    this.#parent = parent
    this.#bindings = bindings
  }

  get #logger(): FastifyBaseLogger {
    this.#made ??= this.#parent.child(this.#bindings)
    return this.#made
  }

  get level() {
    return (this.#made ?? this.#parent).level
  }
  set level(level: string) {
    this.#logger.level = level
  }

  child(bindings: Bindings, options?: ChildLoggerOptions) {
    return this.#logger.child(bindings, options)
  }

  static {
    for (const level of LEVELS) {
      Object.defineProperty(RequestLogger.prototype, level, {
        value(this: RequestLogger, ...args: unknown[]) {
          const logger = this.#logger
          Reflect.apply(logger[level], logger, args)
        },
      })
    }
  }
}
