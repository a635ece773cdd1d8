import {
  type FastifyBaseLogger,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify'
import { type Bindings, type ChildLoggerOptions, type Logger, symbols } from 'pino'
import { jsonString } from './json-text.js'

const COMPLETED = 'request completed'

/**
 * One line per request, when it is answered, instead of Fastify's two (one on arrival,
 * one on completion): the same facts, the method and path included, at half the cost.
 * It is written by the server's logger with the request id, so that a request whose
 * handler logs nothing never needs a logger of its own (see requestLoggerFactory).
 */
export class RequestLog extends LogController {
  override incomingRequest() {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply) {
    const log = request.server.log as unknown as Logger
    if (error) log.error({ ...facts(request, reply), err: error }, 'request errored')
    else if (!writesPlainLines(log)) log.info(facts(request, reply), COMPLETED)
    else if (log.isLevelEnabled('info'))
      writeCompletedLine(log as unknown as PinoInternals, request, reply)
  }
}

/** What the request line says, for pino and Fastify's serializers to write. */
const facts = (request: FastifyRequest, reply: FastifyReply) => ({
  reqId: request.id,
  req: request,
  res: reply,
  responseTime: microsecondsOf(reply.elapsedTime) / 1000,
})

/** The parts of a pino logger its own write reads to start and end a line. */
interface PinoInternals {
  levels: { values: Record<string, number> }
  [symbols.lsCacheSym]: Record<number, string>
  [symbols.timeSym]: () => string
  [symbols.chindingsSym]: string
  [symbols.endSym]: string
  [symbols.streamSym]: { write(line: string): void }
}

/**
 * The line pino writes for { reqId, req, res, responseTime } with Fastify's serializers,
 * byte for byte, built as one string: pino's generic path (each serializer's object,
 * then JSON.stringify of it, then the line's assembly) costs 7,500 instructions more per
 * request, 3% of an invalid POST's (callgrind, main thread). The line's start (level,
 * time, bindings) and end are pino's own, so level labels, a timestamp function or
 * extra bindings still apply.
 */
function writeCompletedLine(log: PinoInternals, request: FastifyRequest, reply: FastifyReply) {
  const remotePort = request.socket?.remotePort
  const head = log[symbols.lsCacheSym][log.levels.values.info as number]
  log[symbols.streamSym].write(
    `${head}${log[symbols.timeSym]()}${log[symbols.chindingsSym]}` +
      `,"reqId":${jsonString(request.id)}` +
      `,"req":{"method":${jsonString(request.method)},"url":${jsonString(request.url)}` +
      field('version', request.headers['accept-version']) +
      field('host', request.host) +
      field('remoteAddress', request.ip) +
      (remotePort === undefined ? '' : `,"remotePort":${remotePort}`) +
      `},"res":{"statusCode":${reply.statusCode}},"responseTime":${millisecondsText(reply.elapsedTime)}` +
      `,"msg":"${COMPLETED}"${log[symbols.endSym]}`,
  )
}

/** The request line's precision: a duration in milliseconds, to the microsecond. */
const microsecondsOf = (milliseconds: number) => Math.round(milliseconds * 1000)

/**
 * Milliseconds to the microsecond, as JSON.stringify writes the rounded number, from
 * integers: V8 finds a fraction's shortest digits on a slow path (2,500 instructions).
 */
export function millisecondsText(milliseconds: number): string {
  const micros = microsecondsOf(milliseconds)
  const fraction = micros % 1000
  const whole = (micros - fraction) / 1000
  if (fraction === 0) return `${whole}`
  if (fraction % 100 === 0) return `${whole}.${fraction / 100}`
  if (fraction % 10 === 0) return `${whole}.${fraction < 100 ? '0' : ''}${fraction / 10}`
  return `${whole}.${fraction < 10 ? '00' : fraction < 100 ? '0' : ''}${fraction}`
}

/** A member of a JSON object after its first, or nothing when the value is undefined. */
function field(name: string, value: unknown) {
  if (value === undefined) return ''
  return `,"${name}":${typeof value === 'string' ? jsonString(value) : JSON.stringify(value)}`
}

// A symbol of pino's that its typings leave out.
const MSG_PREFIX = (symbols as unknown as Record<string, symbol>).msgPrefixSym as symbol
const plainLoggers = new WeakMap<object, boolean>()

/**
 * Whether pino would write this line exactly as writeCompletedLine does: Fastify's
 * serializers for req and res, and nothing that reshapes a line (a log formatter, a
 * mixin, hooks, redaction, another message key, nesting, a prefix, or a multistream
 * that reads each line's level), and a pino logger at all (without one, Fastify's is a
 * placeholder that writes nothing). Checked once per logger.
 */
function writesPlainLines(log: Logger): boolean {
  let plain = plainLoggers.get(log)
  if (plain === undefined) {
    const internals = log as unknown as Record<
      symbol,
      Record<string, unknown> & Record<symbol, unknown>
    >
    const serializers = internals[symbols.serializersSym] ?? {}
    const hooks = internals[symbols.hooksSym] ?? {}
    plain =
      // Fastify's own, which it names so and adds to every logger it is given.
      (serializers.req as { name?: string } | undefined)?.name === 'asReqValue' &&
      (serializers.res as { name?: string } | undefined)?.name === 'asResValue' &&
      internals[symbols.formattersSym]?.log === undefined &&
      internals[symbols.mixinSym] === undefined &&
      hooks.logMethod === undefined &&
      hooks.streamWrite === undefined &&
      Object.keys(internals[symbols.stringifiersSym] ?? {}).length === 0 &&
      (internals[symbols.messageKeySym] as unknown) === 'msg' &&
      !internals[symbols.nestedKeySym] &&
      !internals[MSG_PREFIX] &&
      internals[symbols.streamSym]?.[symbols.needsMetadataGsym] !== true
    plainLoggers.set(log, plain)
  }
  return plain
}

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
