import fc from 'fast-check'

/**
 * The part of JSON Schema (as openapi.yaml uses it, dereferenced) that the fuzz suites
 * turn into values. A keyword the converter does not know stops it with an error rather
 * than being ignored, so a spec that grows a rule cannot be fuzzed as if it had none.
 */
export interface JsonSchema {
  type?: string | string[]
  enum?: unknown[]
  const?: unknown
  description?: string
  default?: unknown
  format?: string
  pattern?: string
  minLength?: number
  maxLength?: number
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  exclusiveMaximum?: number
  multipleOf?: number
  properties?: Record<string, JsonSchema>
  required?: string[]
  additionalProperties?: boolean | JsonSchema
  minProperties?: number
  maxProperties?: number
  items?: JsonSchema
  minItems?: number
  maxItems?: number
  anyOf?: JsonSchema[]
  oneOf?: JsonSchema[]
}

const SUPPORTED = new Set<string>([
  'type',
  'enum',
  'const',
  'description',
  'default',
  'format',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'properties',
  'required',
  'additionalProperties',
  'minProperties',
  'maxProperties',
  'items',
  'minItems',
  'maxItems',
  'anyOf',
  'oneOf',
  // Annotations only.
  'title',
  'example',
  'examples',
  'readOnly',
  'writeOnly',
  'deprecated',
  // The oneOf beside it decides; the mapping only names the branches for SDK generators.
  'discriminator',
])

/** int32 as openapi.yaml's format names it: the bounds a schema may leave out. */
const INT32 = { min: -(2 ** 31), max: 2 ** 31 - 1 }

/** The longest text made for a string schema that sets no maxLength. */
export const UNBOUNDED_TEXT_LENGTH = 300

/**
 * Characters that text in the wild holds: mostly printable ASCII, some whitespace of
 * several kinds (so that text which is only whitespace turns up), letters of other
 * scripts and characters outside the BMP (two UTF-16 units, one character). Never NUL
 * nor half a surrogate pair: those are the invalid generator's.
 */
export const textCharacter: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(' ', '\t', '\n', '\r', '\u00a0', '\u2003', '\u2028', '\u3000'),
  },
  {
    weight: 2,
    arbitrary: fc
      .string({ unit: 'binary', minLength: 1, maxLength: 1 })
      .filter((character) => character !== '\u0000'),
  },
)

/**
 * Past this many characters, text repeats a shorter random run: as long, and far cheaper
 * to make than drawing each of 100,000 characters (a body's limit) one by one.
 */
const LONGEST_DRAWN_TEXT = 1_000

/** Text of `min` to `max` characters (code points, as ajv and Postgres count them). */
export function textOfLength(min: number, max: number): fc.Arbitrary<string> {
  const text = (minLength: number, maxLength: number) =>
    minLength > LONGEST_DRAWN_TEXT
      ? repeatedText(minLength, maxLength)
      : fc.array(textCharacter, { minLength, maxLength }).map((characters) => characters.join(''))
  // The bounds themselves are where rules break: each gets its own share of the runs.
  return fc.oneof(
    { weight: 6, arbitrary: text(min, max) },
    { weight: 1, arbitrary: text(min, min) },
    { weight: 1, arbitrary: text(max, max) },
  )
}

function repeatedText(minLength: number, maxLength: number): fc.Arbitrary<string> {
  const run = fc.array(textCharacter, { minLength: 1, maxLength: 64 })
  return fc
    .tuple(run, fc.integer({ min: minLength, max: maxLength }))
    .map(([characters, length]) =>
      Array.from({ length }, (_, index) => characters[index % characters.length]).join(''),
    )
}

/** Values that the schema accepts. */
export function validValues(schema: JsonSchema, where = '#'): fc.Arbitrary<unknown> {
  assertSupported(schema, where)
  if ('const' in schema) return fc.constant(schema.const)
  if (schema.enum) return fc.constantFrom(...schema.enum)
  const alternatives = schema.anyOf ?? schema.oneOf
  if (alternatives) {
    return fc.oneof(...alternatives.map((each, index) => validValues(each, `${where}/${index}`)))
  }
  const types = [schema.type ?? inferredType(schema, where)].flat()
  return fc.oneof(...types.map((type) => valuesOfType(schema, type, where)))
}

function valuesOfType(schema: JsonSchema, type: string, where: string): fc.Arbitrary<unknown> {
  switch (type) {
    case 'string':
      return strings(schema, where)
    case 'integer':
      return integers(schema)
    case 'number':
      return numbers(schema)
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    case 'object':
      return objects(schema, where)
    case 'array':
      return arrays(schema, where)
    default:
      throw new Error(`schema-arbitrary: unknown type ${type} at ${where}`)
  }
}

function strings(schema: JsonSchema, where: string): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0
  const max = schema.maxLength ?? Math.max(min, UNBOUNDED_TEXT_LENGTH)
  const fitsLength = (text: string) => [...text].length >= min && [...text].length <= max
  if (schema.pattern) {
    return fc.stringMatching(new RegExp(schema.pattern, 'u')).filter(fitsLength)
  }
  if (schema.format) return formatted(schema.format, where).filter(fitsLength)
  return textOfLength(min, max)
}

function formatted(format: string, where: string): fc.Arbitrary<string> {
  switch (format) {
    case 'email':
      return fc.emailAddress()
    case 'date-time':
      return fc
        .date({ min: new Date('1970-01-01'), max: new Date('2999-12-31'), noInvalidDate: true })
        .map((date) => date.toISOString())
    case 'date':
      return fc
        .date({ min: new Date('1970-01-01'), max: new Date('2999-12-31'), noInvalidDate: true })
        .map((date) => date.toISOString().slice(0, 10))
    case 'uuid':
      return fc.uuid()
    case 'uri':
      return fc.webUrl()
    case 'binary':
      return fc.string()
    default:
      throw new Error(`schema-arbitrary: unknown string format ${format} at ${where}`)
  }
}

/** The integer bounds a schema sets, int32 where it sets none. */
export function integerBounds(schema: JsonSchema): { min: number; max: number } {
  const min =
    schema.exclusiveMinimum !== undefined
      ? Math.floor(schema.exclusiveMinimum) + 1
      : Math.ceil(schema.minimum ?? INT32.min)
  const max =
    schema.exclusiveMaximum !== undefined
      ? Math.ceil(schema.exclusiveMaximum) - 1
      : Math.floor(schema.maximum ?? INT32.max)
  return { min, max }
}

function integers(schema: JsonSchema): fc.Arbitrary<number> {
  const { min, max } = integerBounds(schema)
  const step = schema.multipleOf ?? 1
  return fc
    .integer({ min: Math.ceil(min / step), max: Math.floor(max / step) })
    .map((n) => n * step)
}

/** Digits after the point of a step such as 0.01, so that n × step is printed exactly. */
const decimalsOf = (step: number) => (String(step).split('.')[1] ?? '').length

function numbers(schema: JsonSchema): fc.Arbitrary<number> {
  const min = schema.exclusiveMinimum ?? schema.minimum ?? -Number.MAX_VALUE
  const max = schema.exclusiveMaximum ?? schema.maximum ?? Number.MAX_VALUE
  const inBounds = (value: number) =>
    (schema.exclusiveMinimum === undefined ? value >= min : value > min) &&
    (schema.exclusiveMaximum === undefined ? value <= max : value < max)
  if (schema.multipleOf !== undefined) return multiples(schema.multipleOf, min, max, inBounds)
  const anyDouble = fc.double({
    min,
    max,
    minExcluded: schema.exclusiveMinimum !== undefined,
    maxExcluded: schema.exclusiveMaximum !== undefined,
    noNaN: true,
    noDefaultInfinity: true,
  })
  // Doubles spread over the whole range; numbers as people write them (to the cent, below
  // a hundred thousand) find the data.
  const lowCents = Math.max(-10_000_000, Math.ceil(min * 100) + 1)
  const highCents = Math.min(10_000_000, Math.floor(max * 100) - 1)
  if (lowCents > highCents) return anyDouble
  const everyday = fc.integer({ min: lowCents, max: highCents }).map((cents) => cents / 100)
  return fc.oneof({ weight: 2, arbitrary: anyDouble }, { weight: 1, arbitrary: everyday })
}

/** A multiple of the step is n × step: n is drawn, then printed to the step's digits. */
function multiples(
  step: number,
  min: number,
  max: number,
  inBounds: (value: number) => boolean,
): fc.Arbitrary<number> {
  const decimals = decimalsOf(step)
  const nth = (n: number) => Number((n * step).toFixed(decimals))
  const low = Math.max(Math.floor(min / step) - 1, -Number.MAX_SAFE_INTEGER)
  const high = Math.min(Math.ceil(max / step) + 1, Number.MAX_SAFE_INTEGER)
  // One step either side of each bound, then the bounds decide exactly.
  const first = [low, low + 1, low + 2].find((n) => inBounds(nth(n))) ?? low
  const last = [high, high - 1, high - 2].find((n) => inBounds(nth(n))) ?? high
  return fc.integer({ min: first, max: last }).map(nth)
}

function objects(schema: JsonSchema, where: string): fc.Arbitrary<Record<string, unknown>> {
  const properties = schema.properties ?? {}
  const model = Object.fromEntries(
    Object.entries(properties).map(([name, property]) => [
      name,
      validValues(property, `${where}/properties/${name}`),
    ]),
  )
  const required = (schema.required ?? []).filter((name) => name in properties)
  let record: fc.Arbitrary<Record<string, unknown>> = fc.record(model, { requiredKeys: required })
  const extra = schema.additionalProperties
  if (typeof extra === 'object') {
    const names = fc.string({ minLength: 1, maxLength: 20 }).filter((name) => !(name in properties))
    const values = validValues(extra, `${where}/additionalProperties`)
    record = fc
      .tuple(record, fc.dictionary(names, values, { maxKeys: 3 }))
      .map(([known, more]) => ({ ...more, ...known }))
  }
  const { minProperties = 0, maxProperties = Number.POSITIVE_INFINITY } = schema
  if (minProperties === 0 && maxProperties === Number.POSITIVE_INFINITY) return record
  return record.filter((value) => {
    const count = Object.keys(value).length
    return count >= minProperties && count <= maxProperties
  })
}

function arrays(schema: JsonSchema, where: string): fc.Arbitrary<unknown[]> {
  if (!schema.items) throw new Error(`schema-arbitrary: an array without items at ${where}`)
  return fc.array(validValues(schema.items, `${where}/items`), {
    minLength: schema.minItems ?? 0,
    maxLength: schema.maxItems ?? Math.max(schema.minItems ?? 0, 5),
  })
}

/** A schema without `type` still constrains one kind of value through its keywords. */
function inferredType(schema: JsonSchema, where: string): string {
  if (schema.properties || schema.additionalProperties !== undefined) return 'object'
  if (schema.items) return 'array'
  if (schema.minLength !== undefined || schema.maxLength !== undefined || schema.format)
    return 'string'
  if (schema.minimum !== undefined || schema.maximum !== undefined) return 'number'
  throw new Error(`schema-arbitrary: no type at ${where}`)
}

function assertSupported(schema: JsonSchema, where: string) {
  const unknown = Object.keys(schema).filter((keyword) => !SUPPORTED.has(keyword))
  if (unknown.length > 0) {
    throw new Error(`schema-arbitrary: unsupported keyword ${unknown.join(', ')} at ${where}`)
  }
}
