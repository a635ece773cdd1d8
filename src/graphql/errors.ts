import type { FastifyBaseLogger } from 'fastify'
import type { ExecutionResult } from 'graphql'
import { GraphQLError, type GraphQLFormattedError } from 'graphql'
import { AppError, type ErrorCode } from '../platform/errors.js'

const CODES: Partial<Record<ErrorCode, string>> = {
  VALIDATION_ERROR: 'BAD_USER_INPUT',
  BAD_REQUEST: 'BAD_USER_INPUT',
  UNPROCESSABLE: 'BAD_USER_INPUT',
  UNAUTHENTICATED: 'UNAUTHENTICATED',
  FORBIDDEN: 'FORBIDDEN',
  NOT_FOUND: 'NOT_FOUND',
  GONE: 'NOT_FOUND',
}

/**
 * What a client may see of an error: our own errors with their code (and `details`),
 * the document's syntax and validation errors as they are, anything else as an
 * INTERNAL_SERVER_ERROR whose cause stays in the log.
 */
export function toClientError(error: GraphQLError, log: FastifyBaseLogger): GraphQLFormattedError {
  const { message, locations, path } = error
  const original = error.originalError
  const base = { ...(locations && { locations }), ...(path && { path }) }
  if (original instanceof AppError) {
    const code = CODES[original.code] ?? 'INTERNAL_SERVER_ERROR'
    if (!original.details) return { message, ...base, extensions: { code } }
    const { details } = original
    const described = Object.entries(details).map(
      ([field, messages]) => `${field} ${messages.join(', ')}`,
    )
    return { message: described.join('; '), ...base, extensions: { code, details } }
  }
  if (!original || original instanceof GraphQLError) {
    const code = error.extensions.code ?? (path ? 'BAD_USER_INPUT' : 'GRAPHQL_VALIDATION_FAILED')
    return { message, ...base, extensions: { ...error.extensions, code } }
  }
  log.error({ err: original, path }, 'resolver failed')
  return {
    message: 'Internal server error',
    ...base,
    extensions: { code: 'INTERNAL_SERVER_ERROR' },
  }
}

/** Mercurius's errorFormatter: HTTP status as Mercurius sets it, errors made safe. */
export function formatExecution(
  execution: ExecutionResult & { statusCode?: number },
  context: { reply?: { log: FastifyBaseLogger }; app: { log: FastifyBaseLogger } },
) {
  const log = context.reply?.log ?? context.app.log
  // Mercurius wraps a failed validation in one error that holds the real ones.
  const errors = (execution.errors ?? []).flatMap((error) => {
    const inner = (error.originalError as { errors?: unknown } | undefined)?.errors
    return Array.isArray(inner) ? (inner as GraphQLError[]) : [error]
  })
  return {
    statusCode: execution.data ? 200 : (execution.statusCode ?? 200),
    response: {
      data: execution.data ?? null,
      errors: errors.map((error) =>
        toClientError(error instanceof GraphQLError ? error : new GraphQLError(String(error)), log),
      ),
    },
  }
}
