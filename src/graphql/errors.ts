import type { FastifyBaseLogger, FastifyReply } from 'fastify'
import type { ExecutionResult } from 'graphql'
import { GraphQLError, type GraphQLFormattedError } from 'graphql'
import { loggableError } from '../db/errors.js'
import { AppError, type ErrorCode } from '../platform/errors.js'
import { databaseFailureAnswer } from '../platform/plugins/error-handler.js'

/**
 * The `extensions.code` of every error of the catalogue: the GraphQL community's names
 * where there are some (Apollo's), the REST code otherwise. Total, so a code added to
 * openapi.yaml cannot fall through to INTERNAL_SERVER_ERROR unnoticed.
 */
export const GRAPHQL_CODES: Record<ErrorCode, string> = {
  VALIDATION_ERROR: 'BAD_USER_INPUT',
  BAD_REQUEST: 'BAD_USER_INPUT',
  UNPROCESSABLE: 'BAD_USER_INPUT',
  PAYLOAD_TOO_LARGE: 'BAD_USER_INPUT',
  UNSUPPORTED_MEDIA_TYPE: 'BAD_USER_INPUT',
  METHOD_NOT_ALLOWED: 'BAD_USER_INPUT',
  UNAUTHENTICATED: 'UNAUTHENTICATED',
  // No GraphQL operation asks for a second factor; were one to, it is a kind of this.
  MFA_REQUIRED: 'UNAUTHENTICATED',
  FORBIDDEN: 'FORBIDDEN',
  NOT_FOUND: 'NOT_FOUND',
  GONE: 'NOT_FOUND',
  CONFLICT: 'CONFLICT',
  // No GraphQL operation takes an If-Match; were one to, a stale write is a conflict.
  PRECONDITION_FAILED: 'CONFLICT',
  RATE_LIMITED: 'RATE_LIMITED',
  INTERNAL: 'INTERNAL_SERVER_ERROR',
  BAD_GATEWAY: 'BAD_GATEWAY',
  UNAVAILABLE: 'UNAVAILABLE',
}

/**
 * What a client may see of an error: our own errors with their code (and `details`),
 * the document's syntax and validation errors as they are, anything else as an
 * INTERNAL_SERVER_ERROR whose cause stays in the log.
 */
export function toClientError(error: GraphQLError, log: FastifyBaseLogger): GraphQLFormattedError {
  const { message, locations, path } = error
  const original = databaseFailureAnswer(error.originalError) ?? error.originalError
  const base = { ...(locations && { locations }), ...(path && { path }) }
  if (original instanceof AppError) {
    const code = GRAPHQL_CODES[original.code]
    if (!original.details) return { message, ...base, extensions: { code } }
    const { details } = original
    const described = Object.entries(details).map(
      ([field, messages]) => `${field} ${messages.join(', ')}`,
    )
    return { message: described.join('; '), ...base, extensions: { code, details } }
  }
  if (!original || original instanceof GraphQLError) {
    // graphql-jit's errors (a cached query's) may come without extensions.
    const code = error.extensions?.code ?? (path ? 'BAD_USER_INPUT' : 'GRAPHQL_VALIDATION_FAILED')
    return { message, ...base, extensions: { ...error.extensions, code } }
  }
  if (requestErrorStatus(original)) {
    // The request itself was malformed (not JSON, no query, …): the client's to fix.
    return { message: original.message, ...base, extensions: { code: 'BAD_USER_INPUT' } }
  }
  log.error({ err: loggableError(original), path }, 'resolver failed')
  return {
    message: 'Internal server error',
    ...base,
    extensions: { code: 'INTERNAL_SERVER_ERROR' },
  }
}

/** Mercurius's errorFormatter: errors made safe, with the HTTP status a request error carries. */
export function formatExecution(
  execution: ExecutionResult & { statusCode?: number },
  context: { reply?: FastifyReply; app: { log: FastifyBaseLogger } },
) {
  const log = context.reply?.log ?? context.app.log
  const thrown = execution.errors?.length === 1 ? execution.errors[0]?.originalError : undefined
  // Mercurius wraps a failed validation (or a refused request) in one error that holds
  // the real ones; each is reported, under the wrapper when it is a plain Error.
  const errors = (execution.errors ?? []).flatMap((error) => {
    const wrapper = error.originalError
    const inner = (wrapper as { errors?: unknown } | undefined)?.errors
    if (!Array.isArray(inner)) return [error]
    return inner.map((each: Error) =>
      each instanceof GraphQLError
        ? each
        : new GraphQLError(each.message, { originalError: wrapper }),
    )
  })
  const formatted = errors.map((error) => toClientError(error, log))
  const executed = execution.data !== undefined
  const later = executed ? undefined : comeBackLaterStatus(thrown)
  // Refused before it was read (rate limit, maintenance): the status and its Retry-After
  // say so on every media type, as they do for REST.
  if (later) return { statusCode: later, response: { errors: formatted } }
  if (acceptsGraphqlResponse(context.reply?.request.headers.accept)) {
    // application/graphql-response+json: a request that never ran is a 4xx without `data`.
    return executed
      ? { statusCode: 200, response: { data: execution.data, errors: formatted } }
      : { statusCode: requestErrorStatus(thrown) ?? 400, response: { errors: formatted } }
  }
  return {
    statusCode: execution.data ? 200 : (execution.statusCode ?? requestErrorStatus(thrown) ?? 200),
    response: { data: execution.data ?? null, errors: formatted },
  }
}

export const GRAPHQL_RESPONSE_TYPE = 'application/graphql-response+json'

export const acceptsGraphqlResponse = (accept: string | undefined) =>
  accept?.includes(GRAPHQL_RESPONSE_TYPE) ?? false

/** Our errors that ask the client to retry later (429, 503) keep their status. */
function comeBackLaterStatus(error: Error | undefined): number | undefined {
  const later = error instanceof AppError && ['RATE_LIMITED', 'UNAVAILABLE'].includes(error.code)
  return later ? error.statusCode : undefined
}

/**
 * A request Mercurius refused before executing it (a mutation over GET: 405, a body
 * that is not a GraphQL request: 400) keeps its status; resolver errors do not set one.
 */
function requestErrorStatus(error: Error | undefined): number | undefined {
  const status = (error as { statusCode?: unknown } | undefined)?.statusCode
  if (typeof status !== 'number' || status < 400 || status >= 500) return undefined
  // A document that does not parse or validate is answered 200 with its errors, as
  // GraphQL over HTTP asks for application/json.
  const inner = (error as { errors?: unknown }).errors
  const documentError =
    error instanceof GraphQLError ||
    (Array.isArray(inner) && inner.every((each) => each instanceof GraphQLError))
  return documentError || error instanceof AppError ? undefined : status
}
