import { dereference } from '@readme/openapi-parser'
import type { ValidateFunction } from 'ajv'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { specificationPath } from '../../src/http/openapi-routes.js'

interface ResponseSpec {
  content?: Record<string, { schema: object }>
}
interface OperationSpec {
  operationId: string
  security?: Record<string, string[]>[]
  responses: Record<string, ResponseSpec>
}
export type PathSpec = Record<string, OperationSpec>

export const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const

export const specification = (await dereference(specificationPath)) as unknown as {
  paths: Record<string, PathSpec>
  components: { schemas: Record<string, object> }
}

const ajv = new Ajv2020({ allErrors: true, strict: false })
addFormats.default(ajv)
const validators = new Map<object, ValidateFunction>()
const validatorFor = (schema: object) => {
  let validate = validators.get(schema)
  if (!validate) {
    validate = ajv.compile(schema)
    validators.set(schema, validate)
  }
  return validate
}

// Literal paths win over templated ones (/users/me before /users/{id}).
const routes = Object.keys(specification.paths)
  .map((template) => ({
    template,
    pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
    params: (template.match(/\{/g) ?? []).length,
  }))
  .sort((a, b) => a.params - b.params)

export function findOperation(method: string, pathname: string) {
  const route = routes.find((each) => each.pattern.test(pathname))
  const operation = route && specification.paths[route.template]?.[method.toLowerCase()]
  return operation && route ? { template: route.template, operation } : undefined
}

export interface ObservedResponse {
  status: number
  contentType: string | null
  body: unknown
  text: string
}

/**
 * Throws unless the response is one openapi.yaml documents for this request: a
 * documented status, and a body that its schema accepts (or no body where it has none).
 */
export function assertMatchesSpec(method: string, url: string, response: ObservedResponse) {
  const pathname = new URL(url).pathname
  const found = findOperation(method, pathname)
  const where = `${method} ${pathname} → ${response.status}`
  if (!found) {
    // Not an operation of the spec (an unknown route): still the error envelope.
    return assertSchema(where, specification.components.schemas.ErrorEnvelope as object, response)
  }
  const documented = found.operation.responses[String(response.status)]
  if (!documented) throw new Error(`${where}: openapi.yaml does not document this status`)
  const schema = documented.content?.['application/json']?.schema
  if (schema) return assertSchema(where, schema, response)
  const [textual] = Object.entries(documented.content ?? {})
  if (!textual) {
    if (response.text !== '') throw new Error(`${where}: the spec documents no body, got one`)
    return
  }
  // Another media type (GET /metrics' text/plain): that type, and its text fits the schema.
  const [mediaType, { schema: textSchema }] = textual
  if (!response.contentType?.startsWith(mediaType)) {
    throw new Error(`${where}: expected ${mediaType}, got ${response.contentType}`)
  }
  const validate = validatorFor(textSchema)
  if (!validate(response.text)) {
    throw new Error(`${where}: the body breaks openapi.yaml: ${ajv.errorsText(validate.errors)}`)
  }
}

function assertSchema(where: string, schema: object, response: ObservedResponse) {
  if (!response.contentType?.startsWith('application/json')) {
    throw new Error(`${where}: expected JSON, got ${response.contentType}: ${response.text}`)
  }
  const validate = validatorFor(schema)
  if (!validate(response.body)) {
    const problems = ajv.errorsText(validate.errors)
    throw new Error(`${where}: the body breaks openapi.yaml: ${problems}\n${response.text}`)
  }
}
