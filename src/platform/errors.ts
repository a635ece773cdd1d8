import type { components } from '../../generated/openapi.js'

export type ErrorCode = components['schemas']['ErrorCode']
export type ErrorDetails = Record<string, string[]>

/**
 * Every failure the service means to report: a code and a status from the spec's
 * error catalogue. Anything else that escapes a handler is an internal error.
 *
 * These are answers, not faults: an Error by its prototype, made without Error's own
 * constructor, whose native part looks for a stack to capture on every 400 that never
 * shows one. Its `stack` is its first line only, as an Error's with no trace recorded. A
 * fault behind a 5xx is logged as the error it was.
 */
export class AppError implements Error {
  readonly name = 'AppError'
  readonly stack: string

  constructor(
    readonly code: ErrorCode,
    readonly statusCode: number,
    readonly message: string,
    readonly details?: ErrorDetails,
  ) {
    this.stack = `${this.name}: ${message}`
  }
}
Object.setPrototypeOf(AppError.prototype, Error.prototype)

/**
 * Runs `work` recording no stack for what it throws: for a library whose failures are
 * answers to the caller (a forged token), where the stack is never read and recording it
 * was much of what the failure cost.
 */
export function withoutStacks<T>(work: () => T): T {
  const stackTraceLimit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return work()
  } finally {
    Error.stackTraceLimit = stackTraceLimit
  }
}

export const badRequest = (message: string) => new AppError('BAD_REQUEST', 400, message)
export const validationFailed = (details: ErrorDetails) =>
  new AppError('VALIDATION_ERROR', 400, 'The request breaks the rules of its fields', details)
/** Refuses with VALIDATION_ERROR the fields that have a problem; passes when none has. */
export function assertValidFields(problems: Record<string, string | undefined>): void {
  const details: ErrorDetails = {}
  for (const [field, problem] of Object.entries(problems)) if (problem) details[field] = [problem]
  if (Object.keys(details).length > 0) throw validationFailed(details)
}
export const unauthenticated = (message: string) => new AppError('UNAUTHENTICATED', 401, message)
/** A second factor missing or wrong: a login, or a change of two-factor, needs a good code. */
export const mfaRequired = (message: string) => new AppError('MFA_REQUIRED', 401, message)
export const forbidden = (message: string) => new AppError('FORBIDDEN', 403, message)
export const notFound = (message: string) => new AppError('NOT_FOUND', 404, message)
/** An Accept this server cannot answer: the media type's code, with the status of its side. */
export const notAcceptable = (message: string) =>
  new AppError('UNSUPPORTED_MEDIA_TYPE', 406, message)
export const conflict = (message: string) => new AppError('CONFLICT', 409, message)
export const gone = (message: string) => new AppError('GONE', 410, message)
/** An If-Match that names no current version of what the request would change. */
export const preconditionFailed = (message: string) =>
  new AppError('PRECONDITION_FAILED', 412, message)
export const payloadTooLarge = (message: string) => new AppError('PAYLOAD_TOO_LARGE', 413, message)
export const unsupportedMediaType = (message: string) =>
  new AppError('UNSUPPORTED_MEDIA_TYPE', 415, message)
export const unprocessable = (message: string) => new AppError('UNPROCESSABLE', 422, message)
export const unavailable = (message: string) => new AppError('UNAVAILABLE', 503, message)
export const internal = () => new AppError('INTERNAL', 500, 'Internal server error')
