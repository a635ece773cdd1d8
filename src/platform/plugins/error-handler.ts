import type {
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifySchemaValidationError,
} from 'fastify'
import fp from 'fastify-plugin'
import { isDatabaseUnavailable, isMissingUserReference, loggableError } from '../../db/errors.js'
import {
  AppError,
  badRequest,
  type ErrorCode,
  internal,
  notFound,
  unavailable,
  unsupportedMediaType,
  validationFailed,
} from '../errors.js'
import { accountGone } from '../infrastructure/live-accounts.js'
import { validationDetails } from './validation.js'

const FRAMEWORK_ERRORS: Record<string, AppError> = {
  // Fastify's parser refuses prototype poisoning with the same error as broken JSON.
  FST_ERR_CTP_INVALID_JSON_BODY: badRequest(
    'The body is not valid JSON, or has a __proto__ or constructor.prototype key, which are refused',
  ),
  FST_ERR_CTP_EMPTY_JSON_BODY: badRequest('The body is empty, yet its Content-Type is JSON'),
  FST_ERR_CTP_BODY_TOO_LARGE: new AppError('PAYLOAD_TOO_LARGE', 413, 'The body is too large'),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: unsupportedMediaType('The body must be sent as application/json'),
  // Fastify's own messages quote the whole path, which may be longer than a message is.
  FST_ERR_BAD_URL: badRequest('The path is not validly percent-encoded UTF-8'),
  FST_ERR_MAX_PARAM_LENGTH: badRequest('A path parameter is longer than any valid value'),
}

const CODES_BY_STATUS: Record<number, ErrorCode> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHENTICATED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  406: 'UNSUPPORTED_MEDIA_TYPE',
  409: 'CONFLICT',
  410: 'GONE',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  422: 'UNPROCESSABLE',
  429: 'RATE_LIMITED',
}

const RETRY_AFTER_SECONDS = 2

const clientGone = badRequest('The connection closed before the request arrived whole')

export const databaseUnavailable = () =>
  unavailable('The database is not answering; retry in a moment')

/** The one place where any failure becomes the spec's error envelope. */
export function toAppError(error: FastifyError): AppError {
  if (error instanceof AppError) return error
  const known = error.code ? FRAMEWORK_ERRORS[error.code] : undefined
  if (known) return known
  // The client closed its connection mid-body (or stalled until the server did): no fault
  // of the server's, and no one left to read the answer.
  if (error.code === 'ECONNRESET') return clientGone
  const status = error.statusCode ?? 500
  const code = CODES_BY_STATUS[status]
  // Framework 4xx errors describe the request, not the server: safe to pass on.
  if (code && error.code?.startsWith('FST_')) return new AppError(code, status, error.message)
  return databaseFailureAnswer(error) ?? internal()
}

/** The answer a database failure owes the client, REST's or GraphQL's; none for a fault. */
export function databaseFailureAnswer(error: unknown): AppError | undefined {
  if (isDatabaseUnavailable(error)) return databaseUnavailable()
  // A write for an account deleted since its token was checked (live-accounts.ts).
  if (isMissingUserReference(error)) return accountGone()
  return undefined
}

/**
 * Fastify's `schemaErrorFormatter`: a request that fails its schema becomes the envelope's
 * error at once, rather than an Error with a stack and a message nobody reads.
 */
export const schemaErrorFormatter = (errors: FastifySchemaValidationError[], context: string) =>
  validationFailed(validationDetails(errors as never, context))

/**
 * Fastify's `frameworkErrors`: failures found while routing, before any route or hook
 * runs (a path that does not decode, a segment too long to match), which Fastify would
 * otherwise answer in a shape of its own.
 */
export function answerFrameworkError(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  // No hook runs for these: the request id header is set here, as on every response.
  reply.header('x-request-id', request.id)
  return sendError(reply, toAppError(error))
}

async function errorHandlerPlugin(app: FastifyInstance) {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const appError = toAppError(error)
    if (appError.statusCode >= 500)
      request.log.error({ err: loggableError(error) }, 'request failed')
    else if (appError === clientGone) request.log.info('the client went away mid-request')
    // A client told to come back should be told when; outages here pass in seconds.
    if (appError.statusCode === 503 && !reply.hasHeader('retry-after')) {
      reply.header('retry-after', RETRY_AFTER_SECONDS)
    }
    return sendError(reply, appError)
  })
  app.setNotFoundHandler((request: FastifyRequest, reply) => {
    const pathname = request.url.split('?')[0] ?? '/'
    const allowed = app.allowedMethods(pathname)
    if (allowed.length === 0) return sendError(reply, notFound(`No route ${pathname}`))
    reply.header('allow', allowed.join(', '))
    return sendError(
      reply,
      new AppError('METHOD_NOT_ALLOWED', 405, `${request.method} is not allowed on ${pathname}`),
    )
  })
}

/** The error envelope, for an answer that must not go through a route's own error handler. */
export function sendError(reply: FastifyReply, error: AppError) {
  const { code, message, details } = error
  return reply
    .code(error.statusCode)
    .send({ error: details ? { code, message, details } : { code, message } })
}

export const errorHandler = fp(errorHandlerPlugin, {
  name: 'error-handler',
  dependencies: ['route-table'],
})
