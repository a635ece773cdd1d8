import type { OperationId } from '../../../src/http/operations.js'
import { METHODS, specification } from '../contract.js'
import type { JsonSchema } from '../schema-arbitrary.js'

/** A parameter of openapi.yaml with its schema; the parameter's description is the rule's. */
export interface Parameter {
  name: string
  in: 'path' | 'query' | 'header'
  required: boolean
  schema: JsonSchema
}

/** What the fuzz suites need to know of one operation of openapi.yaml. */
export interface RestOperation {
  operationId: OperationId
  method: string
  /** `/products/{id}` */
  template: string
  parameters: Parameter[]
  body?: JsonSchema
  /** Undefined: public. Otherwise the roles allowed; empty admits any valid token. */
  roles?: string[]
  /** Signed by its sender (webhookSignature) instead: checked once the body is parsed. */
  signed: boolean
  /** The statuses openapi.yaml documents. */
  statuses: number[]
}

interface RawParameter {
  name: string
  in: string
  required?: boolean
  description?: string
  schema: JsonSchema
}
interface RawOperation {
  operationId: OperationId
  parameters?: RawParameter[]
  requestBody?: { content: { 'application/json'?: { schema: JsonSchema } } }
  security?: Record<string, string[]>[]
  responses: Record<string, unknown>
}

const toParameter = (raw: RawParameter): Parameter => ({
  name: raw.name,
  in: raw.in as Parameter['in'],
  required: raw.required ?? false,
  // The rule a service adds is stated on the parameter, next to its schema.
  schema: { ...raw.schema, description: raw.description ?? raw.schema.description },
})

const { securitySchemes } = specification.components as unknown as {
  securitySchemes: Record<string, { in?: string; name?: string }>
}

/**
 * The header the webhookSignature scheme names, as an optional parameter of the
 * operations it secures: `sha256=<hex>`, of a key the suites do not hold. Signed or
 * not, a server without WEBHOOK_SECRET must refuse a delivery alike.
 */
const signatureParameter: Parameter = {
  name: securitySchemes.webhookSignature?.name ?? 'X-Webhook-Signature',
  in: 'header',
  required: false,
  schema: { type: 'string', pattern: '^sha256=[0-9a-f]{64}$' },
}

/**
 * The roles an operation's security admits, undefined when it is public. bearerAuth's
 * list names them; metricsToken takes an admin's access token, or METRICS_TOKEN, which
 * the fuzz servers do not have (world.ts), as its description says.
 */
function rolesOf(security: RawOperation['security']): string[] | undefined {
  const bearer = security?.find((requirement) => 'bearerAuth' in requirement)
  if (bearer) return bearer.bearerAuth
  return security?.some((requirement) => 'metricsToken' in requirement) ? ['admin'] : undefined
}

/** Every operation of the dereferenced openapi.yaml, in the order the spec lists them. */
export const restOperations: RestOperation[] = Object.entries(specification.paths).flatMap(
  ([template, pathItem]) => {
    const shared = ((pathItem as { parameters?: RawParameter[] }).parameters ?? []).map(toParameter)
    return METHODS.flatMap((method) => {
      const operation = pathItem[method] as unknown as RawOperation | undefined
      if (!operation) return []
      const roles = rolesOf(operation.security)
      const body = operation.requestBody?.content['application/json']?.schema
      const signed = Boolean(operation.security?.some((each) => 'webhookSignature' in each))
      const own = (operation.parameters ?? []).map(toParameter)
      return [
        {
          operationId: operation.operationId,
          method: method.toUpperCase(),
          template,
          parameters: [...shared, ...own, ...(signed ? [signatureParameter] : [])],
          ...(body && { body }),
          ...(roles && { roles }),
          signed,
          statuses: Object.keys(operation.responses).map(Number),
        },
      ]
    })
  },
)
