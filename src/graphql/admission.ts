import type { FastifyRequest } from 'fastify'
import { type DocumentNode, GraphQLError, type GraphQLSchema } from 'graphql'
import type { OperationBudget, OverBudget } from '../platform/rate-limit.js'
import { parseOperation, type RuleSettings, validateOperation } from './limits.js'

/** An operation as a WebSocket message carries it, in either subprotocol. */
export interface OperationPayload {
  query?: unknown
  variables?: unknown
}

export type Admission =
  | { document: DocumentNode; variables: Record<string, unknown> }
  | { errors: readonly GraphQLError[] }

export interface AdmissionOptions {
  schema: () => GraphQLSchema
  /** The rate limiter's, while rate limits are on. */
  operationBudget: OperationBudget | undefined
  rules: RuleSettings
}

const rateLimited = ({ retryAfterSeconds }: OverBudget) =>
  new GraphQLError(`Too many requests: retry in ${retryAfterSeconds} seconds`, {
    extensions: { code: 'RATE_LIMITED', retryAfter: retryAfterSeconds },
  })

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * What an operation started over a WebSocket passes before it runs, in either
 * subprotocol, in order of cost: one draw on its caller's rate-limit budget (the one
 * HTTP requests draw on), the token limit while parsing, then the service's limits with
 * the real variables and graphql's rules. HTTP runs the same checks in Mercurius's
 * hooks (plugin.ts). A refusal is the operation's errors; the socket stays open.
 */
export function createAdmission({ schema, operationBudget, rules }: AdmissionOptions) {
  return async (
    upgrade: FastifyRequest,
    caller: string,
    payload: OperationPayload,
  ): Promise<Admission> => {
    const overBudget = await operationBudget?.(upgrade, caller)
    if (overBudget) return { errors: [rateLimited(overBudget)] }
    if (typeof payload.query !== 'string') {
      const error = new GraphQLError('The query must be a string of GraphQL', {
        extensions: { code: 'BAD_USER_INPUT' },
      })
      return { errors: [error] }
    }
    let document: DocumentNode
    try {
      document = parseOperation(payload.query)
    } catch (error) {
      return { errors: [error as GraphQLError] }
    }
    const variables = isRecord(payload.variables) ? payload.variables : {}
    const errors = validateOperation(schema(), document, variables, rules)
    return errors.length > 0 ? { errors } : { document, variables }
  }
}

export type Admit = ReturnType<typeof createAdmission>
