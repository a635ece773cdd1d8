import { dereference } from '@readme/openapi-parser'
import type { ValidateFunction } from 'ajv'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { specificationPath } from '../../src/http/openapi-routes.js'
import { openapiV2Path } from '../../src/paths.js'

interface ResponseSpec {
  content?: Record<string, { schema: object }>
}
interface OperationSpec {
  operationId: string
  parameters?: { name: string; in: string }[]
  security?: Record<string, string[]>[]
  responses: Record<string, ResponseSpec>
}
export type PathSpec = Record<string, OperationSpec>

export const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const

interface Specification {
  paths: Record<string, PathSpec>
  components: { schemas: Record<string, object> }
}
/** openapi.yaml: version 1 of the REST API. */
export const specification = (await dereference(specificationPath)) as unknown as Specification
/** Each version's description, by the `api-version` a response says answered it. */
const specificationsByVersion: Record<string, Specification> = {
  '1': specification,
  '2': (await dereference(openapiV2Path)) as unknown as Specification,
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

/** The operation a request reached, in the description of the version that answered it. */
export function findOperation(method: string, url: string, apiVersion?: string | null) {
  const pathname = new URL(url, 'http://any').pathname.replace(/^\/api\/v[0-9]+(?=\/)/, '')
  const route = routes.find((each) => each.pattern.test(pathname))
  const paths = specificationsByVersion[apiVersion ?? '1']?.paths
  const operation = route && paths?.[route.template]?.[method.toLowerCase()]
  return operation && route ? { template: route.template, operation } : undefined
}

export interface ObservedResponse {
  status: number
  contentType: string | null
  body: unknown
  text: string
  /** The `api-version` header: which version's description the answer must keep. */
  apiVersion?: string | null
}

/**
 * Throws unless the response is one openapi.yaml documents for this request: a
 * documented status, and a body that its schema accepts (or no body where it has none).
 */
export function assertMatchesSpec(method: string, url: string, response: ObservedResponse) {
  const pathname = new URL(url).pathname
  const found = findOperation(method, url, response.apiVersion)
  const where = `${method} ${pathname} → ${response.status}`
  if (!found) {
    // Not an operation of the spec (an unknown route): still the error envelope.
    return assertSchema(where, specification.components.schemas.ErrorEnvelope as object, response)
  }
  const documented = found.operation.responses[String(response.status)]
  if (!documented) throw new Error(`${where}: openapi.yaml does not document this status`)
  const content = Object.entries(documented.content ?? {})
  if (content.length === 0) {
    if (response.text !== '') throw new Error(`${where}: the spec documents no body, got one`)
    return
  }
  // The documented media type the answer came as; JSON when it names none it documents.
  const [mediaType, { schema }] =
    content.find(
      ([type]) =>
        type !== 'application/json' && (type === '*/*' || response.contentType?.startsWith(type)),
    ) ??
    content.find(([type]) => type === 'application/json') ??
    (content[0] as [string, { schema: object }])
  if (mediaType === 'application/json') return assertSchema(where, schema, response)
  // Another media type (GET /metrics' text/plain): that type, and its text fits the schema.
  if (mediaType !== '*/*' && !response.contentType?.startsWith(mediaType)) {
    throw new Error(`${where}: expected ${mediaType}, got ${response.contentType}`)
  }
  const validate = validatorFor(schema)
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
