import { DrizzleQueryError } from 'drizzle-orm/errors'

/** Postgres reports a broken unique constraint as SQLSTATE 23505, on either driver. */
export function isUniqueViolation(error: unknown): boolean {
  return causes(error).some((each) => codeOf(each) === '23505')
}

/**
 * A row written on behalf of a user that no longer exists: SQLSTATE 23503 on one of the
 * foreign keys to users (drizzle names them `<table>_<column>_users_id_fk`).
 */
export function isMissingUserReference(error: unknown): boolean {
  return causes(error).some((each) => {
    if (codeOf(each) !== '23503') return false
    // postgres.js names the constraint constraint_name, PGlite constraint.
    const { constraint_name, constraint } = each as {
      constraint_name?: string
      constraint?: string
    }
    return (constraint_name ?? constraint ?? '').endsWith('_users_id_fk')
  })
}

/**
 * Failures that say nothing about the request and pass when the database is back: no
 * connection, no answer in time, a server shutting down or refusing connections, a
 * statement ended by statement_timeout, a transaction that lost a deadlock or a
 * serialization conflict. The client may retry them.
 */
const TRANSIENT = new Set([
  // postgres.js and Node's sockets
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'CONNECTION_ENDED',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'DATABASE_DEADLINE',
  // SQLSTATE: connection exceptions, operator intervention, resources, rollbacks
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '57014',
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '40001',
  '40P01',
])

/**
 * A statement refused for the values it was given: SQLSTATE class 22 (a value out of
 * range or malformed) or 23 (a broken constraint). Sent again with other values, it may pass.
 */
export function isDataError(error: unknown): boolean {
  return causes(error).some((each) => /^2[23]/.test(String(codeOf(each))))
}

export function isDatabaseUnavailable(error: unknown): boolean {
  return causes(error).some((each) => TRANSIENT.has(String(codeOf(each))))
}

/**
 * A failed statement as it may be logged: the driver's error and the statement, never
 * the parameters, which hold password hashes and tokens (drizzle's own message lists
 * them).
 */
export function loggableError(error: unknown): unknown {
  if (!(error instanceof DrizzleQueryError)) return error
  const cause = error.cause instanceof Error ? error.cause : undefined
  return {
    type: cause?.name ?? 'DrizzleQueryError',
    message: cause?.message ?? 'The statement failed',
    code: codeOf(cause),
    statement: error.query,
    // drizzle's own stack begins with its message, parameters included.
    stack: cause?.stack,
  }
}

// drizzle wraps the driver's error; the code is on its cause.
function causes(error: unknown): unknown[] {
  const chain: unknown[] = []
  for (let current = error; current instanceof Error; current = current.cause) chain.push(current)
  return chain
}

const codeOf = (error: unknown) => (error as { code?: unknown }).code
