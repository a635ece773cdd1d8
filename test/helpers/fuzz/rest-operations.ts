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

/** Every operation of the dereferenced openapi.yaml, in the order the spec lists them. */
export const restOperations: RestOperation[] = Object.entries(specification.paths).flatMap(
  ([template, pathItem]) => {
    const shared = ((pathItem as { parameters?: RawParameter[] }).parameters ?? []).map(toParameter)
    return METHODS.flatMap((method) => {
      const operation = pathItem[method] as unknown as RawOperation | undefined
      if (!operation) return []
      const security = operation.security?.find((requirement) => 'bearerAuth' in requirement)
      const body = operation.requestBody?.content['application/json']?.schema
      return [
        {
          operationId: operation.operationId,
          method: method.toUpperCase(),
          template,
          parameters: [...shared, ...(operation.parameters ?? []).map(toParameter)],
          ...(body && { body }),
          ...(security && { roles: security.bearerAuth }),
          statuses: Object.keys(operation.responses).map(Number),
        },
      ]
    })
  },
)
