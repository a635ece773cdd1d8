import type { ErrorObject } from 'ajv'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'
import type { ErrorDetails } from '../errors.js'
import {
  multipleOfKeyword,
  numericTextCheck,
  storableTextKeyword,
  withStorableText,
} from '../input-rules.js'

function createAjv(coerceTypes: false | 'array') {
  const ajv = new Ajv2020({
    coerceTypes,
    useDefaults: true,
    // Unknown body fields are an error, never silently dropped (Fastify's default).
    removeAdditional: false,
    // Report every failing field at once, so `details` is complete.
    allErrors: true,
    strict: true,
    strictRequired: false,
  })
  addFormats.default(ajv)
  // OpenAPI's discriminator is a hint for SDK generators; the oneOf beside it validates.
  ajv.addKeyword({ keyword: 'discriminator', schemaType: 'object' })
  ajv.addKeyword(storableTextKeyword)
  // 19.99 / 0.01 is not an integer in binary floating point, nor is 9687400934.96 / 0.01.
  ajv.removeKeyword('multipleOf')
  ajv.addKeyword(multipleOfKeyword)
  // Two's complement: one more negative value than positive ones.
  ajv.addFormat('int32', {
    type: 'number',
    validate: (value: number) => Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31,
  })
  return ajv
}

/**
 * Query strings, paths and headers arrive as text and are coerced to the spec's types;
 * JSON bodies are typed already, so a body's "12" stays a string and fails validation.
 */
export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const coercing = createAjv('array')
  const exact = createAjv(false)
  return ({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? exact : coercing
    const named = httpPart === 'headers' ? withLowerCaseNames(schema) : schema
    const validate = ajv.compile(withStorableText(named) as object)
    const checkText = httpPart === 'body' ? undefined : numericTextCheck(named)
    if (!checkText) return validate as ReturnType<FastifySchemaCompiler<unknown>>
    const validateText = (data: unknown) => {
      const errors = checkText(data)
      validateText.errors = errors.length > 0 ? errors : null
      if (errors.length > 0) return false
      const valid = validate(data)
      validateText.errors = validate.errors ?? null
      return valid
    }
    validateText.errors = null as ErrorObject[] | null
    return validateText as ReturnType<FastifySchemaCompiler<unknown>>
  }
}

/**
 * Node hands headers over with lower-case names, and Fastify lowers the names of a
 * headers schema to match, but not for a compiler of one's own like this one: without
 * this, `If-None-Match` in openapi.yaml never met `if-none-match` and went unchecked.
 */
function withLowerCaseNames(schema: unknown): unknown {
  const { properties, required, ...rest } = schema as {
    properties?: Record<string, unknown>
    required?: string[]
  }
  return {
    ...rest,
    ...(properties && {
      properties: Object.fromEntries(
        Object.entries(properties).map(([name, each]) => [name.toLowerCase(), each]),
      ),
    }),
    ...(required && { required: required.map((name) => name.toLowerCase()) }),
  }
}

/** Maps ajv errors to `details`: each failing field (dotted path) with its messages. */
export function validationDetails(errors: ErrorObject[], context: string): ErrorDetails {
  const details: ErrorDetails = {}
  for (const error of errors) {
    const [field, message] = describe(error)
    const key = field || context
    const messages = details[key] ?? []
    if (!messages.includes(message)) messages.push(message)
    details[key] = messages
  }
  return details
}

/**
 * `/items/0/name` as `items.0.name`, built without arrays, and without a search when the
 * path has one segment, as most do (an invalid body has several, each built on every
 * such request).
 */
function dottedPath(instancePath: string): string {
  if (instancePath.length === 0) return ''
  const path = instancePath.slice(1)
  return path.includes('/') ? path.replaceAll('/', '.') : path
}

function describe(error: ErrorObject): [field: string, message: string] {
  const path = dottedPath(error.instancePath)
  const child = (name: string) => (path ? `${path}.${name}` : name)
  switch (error.keyword) {
    case 'required':
      return [child(error.params.missingProperty), 'is required']
    case 'additionalProperties':
      return [child(error.params.additionalProperty), 'is not allowed']
    default:
      return [path, error.message ?? 'is invalid']
  }
}
