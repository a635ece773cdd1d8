import type { ErrorObject, FuncKeywordDefinition } from 'ajv'

/**
 * Rules every input obeys beyond what its schema in openapi.yaml says, applied when the
 * schemas are compiled, so they cost nothing per request that ajv does not already do.
 */

// Half a surrogate pair is not a character at all and cannot be stored as UTF-8. Without
// the `u` flag, the classes match UTF-16 code units.
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** A JSON object: neither null nor an array. */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** Postgres refuses text with a NUL character, and no text holds half a character. */
export const isStorableText = (text: string) =>
  !text.includes('\u0000') && !UNPAIRED_SURROGATE.test(text)

function storableText(_enabled: boolean, data: string): boolean {
  if (isStorableText(data)) return true
  storableText.errors = [
    {
      keyword: STORABLE_TEXT,
      message: 'must not contain NUL characters or unpaired surrogates',
      params: {},
    } as Partial<ErrorObject>,
  ]
  return false
}
storableText.errors = undefined as Partial<ErrorObject>[] | undefined

const STORABLE_TEXT = 'storableText'

export const storableTextKeyword: FuncKeywordDefinition = {
  keyword: STORABLE_TEXT,
  type: 'string',
  schemaType: 'boolean',
  validate: storableText,
}

// Values, not schemas: nothing beneath these keys is walked.
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'example', 'examples'])

/** The schema with every string in it held to storable text. */
export function withStorableText(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withStorableText)
  if (schema === null || typeof schema !== 'object') return schema
  const copy: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    copy[key] = DATA_KEYWORDS.has(key) ? value : withStorableText(value)
  }
  const { type } = copy
  if (type === 'string' || (Array.isArray(type) && type.includes('string'))) {
    copy[STORABLE_TEXT] = true
  }
  return copy
}

/** Digits after the point of a step such as 0.01 or 1e-7. */
function decimalsOf(step: number): number {
  const [mantissa = '', exponent = '0'] = String(step).split('e')
  return Math.max(0, (mantissa.split('.')[1]?.length ?? 0) - Number(exponent))
}

/**
 * Whether a number is a multiple of the step. ajv divides, and in binary floating point
 * 19.99 / 0.01 is not an integer; its remedy, a tolerance of 1e-9 on the quotient, fails
 * large values (9687400934.96 / 0.01 is 1e-4 off), which openapi.yaml allows as prices.
 * Within the tolerance, or exactly the nearest multiple once printed to the step's
 * digits, it is one.
 */
export function isMultipleOf(value: number, step: number): boolean {
  const quotient = value / step
  const nearest = Math.round(quotient)
  if (Math.abs(quotient - nearest) < 1e-9) return true
  const digits = decimalsOf(step)
  return digits <= 100 && Number((nearest * step).toFixed(digits)) === value
}

function multipleOf(step: number, data: number): boolean {
  if (isMultipleOf(data, step)) return true
  multipleOf.errors = [
    { keyword: 'multipleOf', message: `must be multiple of ${step}`, params: { multipleOf: step } },
  ]
  return false
}
multipleOf.errors = undefined as Partial<ErrorObject>[] | undefined

/** ajv's multipleOf, replaced (see isMultipleOf). */
export const multipleOfKeyword: FuncKeywordDefinition = {
  keyword: 'multipleOf',
  type: 'number',
  schemaType: 'number',
  validate: multipleOf,
}

const NUMERIC_TEXT = {
  integer: { pattern: /^-?\d+$/, message: 'must be an integer in decimal digits' },
  number: {
    pattern: /^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/,
    message: 'must be a finite number in decimal notation',
  },
}

/**
 * Query and path values arrive as text, and ajv coerces whatever Number() reads: hex
 * (`0x10`), `Infinity`, padded digits, and decimals too large for a double (`1e400`)
 * as Infinity. Numbers in a URL are decimal and finite, so the text is checked before
 * it is coerced; the errors are ajv's shape, for the same `details`.
 */
export function numericTextCheck(schema: unknown): ((data: unknown) => ErrorObject[]) | undefined {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties
  const numeric = Object.entries(properties ?? {}).flatMap(([name, property]) => {
    const rule = NUMERIC_TEXT[property.type as keyof typeof NUMERIC_TEXT]
    return rule ? [{ name, ...rule }] : []
  })
  if (numeric.length === 0) return undefined
  return (data) =>
    numeric.flatMap(({ name, pattern, message }) => {
      const raw = (data as Record<string, unknown> | undefined)?.[name]
      if (typeof raw !== 'string' || (pattern.test(raw) && Number.isFinite(Number(raw)))) return []
      return [{ instancePath: `/${name}`, schemaPath: '', keyword: 'type', params: {}, message }]
    })
}

/**
 * What is wrong with text that people read (a name, a message), beyond its length: blank
 * text, or text that cannot be stored. Undefined when nothing is.
 */
export function readableTextProblem(text: string): string | undefined {
  if (!isStorableText(text)) return 'must not contain NUL characters or unpaired surrogates'
  if (text.trim() === '') return 'must not be blank'
  return undefined
}

/** A GraphQL ID as the integer id of a row: undefined for anything no row can have. */
export function rowIdOf(id: string): number | undefined {
  const value = Number(id)
  return /^[1-9]\d{0,9}$/.test(id) && value <= 2 ** 31 - 1 ? value : undefined
}
