import type { FastifyRequest } from 'fastify'
import { type DocumentNode, GraphQLError, type GraphQLSchema } from 'graphql'
import type { SubscribePayload } from 'graphql-ws'
import { setNewest } from '../../platform/newest-entries.js'
import type { OperationBudget, OverBudget } from '../../platform/plugins/rate-limit.js'
import {
  createVariablesCheck,
  LIMITS,
  parseOperation,
  type RuleSettings,
  validateDocument,
} from '../limits.js'
import type { DocumentRequest, PersistedDocuments } from '../persisted-documents.js'

/** An operation as a WebSocket message carries it, in either subprotocol. */
export type OperationPayload = Pick<SubscribePayload, 'query' | 'variables'> & DocumentRequest

export type Admission =
  | { query: string; document: DocumentNode; variables: Record<string, unknown> }
  | { errors: readonly GraphQLError[] }

export interface AdmissionOptions {
  schema: () => GraphQLSchema
  /** The rate limiter's, while rate limits are on. */
  operationBudget: OperationBudget | undefined
  rules: RuleSettings
  documents: PersistedDocuments
}

const rateLimited = ({ retryAfterSeconds }: OverBudget) =>
  new GraphQLError(`Too many requests: retry in ${retryAfterSeconds} seconds`, {
    extensions: { code: 'RATE_LIMITED', retryAfter: retryAfterSeconds },
  })

interface CheckedDocument {
  document: DocumentNode
  errors: readonly GraphQLError[]
}

/**
 * Each document's text parsed and checked once, as Mercurius does over HTTP: a chat's
 * every subscriber sends the same one, and parsing and validating it for each was a
 * large part of what an instance spent through the fan-out benchmark (and the most of
 * a reconnecting crowd's). The newest LIMITS.documentsKept are kept, per schema; a
 * document that cannot be parsed is not: it costs at most the token limit.
 */
function checkedDocuments(rules: RuleSettings) {
  const bySchema = new WeakMap<GraphQLSchema, Map<string, CheckedDocument>>()
  return (schema: GraphQLSchema, query: string): CheckedDocument => {
    let known = bySchema.get(schema)
    if (!known) {
      known = new Map()
      bySchema.set(schema, known)
    }
    let checked = known.get(query)
    if (!checked) {
      const document = parseOperation(query)
      checked = { document, errors: validateDocument(schema, document, rules) }
      setNewest(known, query, checked, LIMITS.documentsKept)
    }
    return checked
  }
}

/**
 * What an operation started over a WebSocket passes before it runs, in either
 * subprotocol, in order of cost: one draw on its caller's rate-limit budget (the one
 * HTTP requests draw on), the document a hash names or the refusal of one not trusted
 * (persisted-documents.ts, before any parse), the token limit while parsing, the
 * service's limits and graphql's rules, then ranges and the cost again with the real
 * variables; a document registered by hash is kept only then. HTTP runs the same checks
 * in Mercurius's hooks (plugin.ts). A refusal is the operation's errors; the socket
 * stays open.
 */
export function createAdmission({ schema, operationBudget, rules, documents }: AdmissionOptions) {
  const checked = checkedDocuments(rules)
  const variablesErrors = createVariablesCheck()
  return async (
    upgrade: FastifyRequest,
    caller: string,
    payload: OperationPayload,
  ): Promise<Admission> => {
    const overBudget = await operationBudget?.(upgrade, caller)
    if (overBudget) return { errors: [rateLimited(overBudget)] }
    const resolution = await documents.resolve(payload)
    if ('refused' in resolution) return { errors: [resolution.refused] }
    const query = resolution.query ?? ''
    const current = schema()
    let operation: CheckedDocument
    try {
      operation = checked(current, query)
    } catch (error) {
      return { errors: [error as GraphQLError] }
    }
    const { document } = operation
    if (operation.errors.length > 0) return { errors: operation.errors }
    // graphql-ws has checked the message: variables are an object, or absent.
    const variables = payload.variables ?? {}
    const errors = variablesErrors(current, document, variables)
    if (errors.length > 0) return { errors }
    await documents.register(resolution.registration)
    return { query, document, variables }
  }
}

export type Admit = ReturnType<typeof createAdmission>
