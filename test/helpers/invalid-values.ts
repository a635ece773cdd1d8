import fc from 'fast-check'
import { rulesOf } from './fuzz/documented-rules.js'
import {
  integerBounds,
  type JsonSchema,
  textCharacter,
  textOfLength,
  validValues,
} from './schema-arbitrary.js'

/** A value that breaks its schema or a documented rule, and what is wrong with it. */
export interface Mutant {
  value: unknown
  /** What was broken, for the counterexample: `price: above maximum`. */
  flaw: string
  /** The dotted field the flaw is in, which `details` must name; absent for the whole. */
  field?: string
}

/** Text longer than any field allows, well under the 1 MiB body limit. */
const HUGE_TEXT_LENGTH = 200_000
const DEEP_NESTING = 2_000

/** `[[[…]]]` or `{"a":{"a":…}}`, deeper than any schema: parsers and validators recurse. */
export function deeplyNested(depth: number, kind: 'array' | 'object'): unknown {
  let value: unknown = 1
  for (let level = 0; level < depth; level += 1) value = kind === 'array' ? [value] : { a: value }
  return value
}

const mutant = (flaw: string, field?: string) => (value: unknown) =>
  (field === undefined ? { value, flaw } : { value, flaw, field }) as Mutant

const typesOf = (schema: JsonSchema): string[] => {
  if (schema.type) return [schema.type].flat()
  if (schema.enum || 'const' in schema) return [...new Set(schemaValues(schema).map(jsonType))]
  return []
}
const schemaValues = (schema: JsonSchema) =>
  'const' in schema ? [schema.const] : (schema.enum ?? [])
const jsonType = (value: unknown) =>
  value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value

/**
 * Values of every JSON type the schema does not allow: "12" for a number, 12 for a
 * string, null where null is not allowed, and deeply nested arrays and objects.
 */
function wrongTypes(schema: JsonSchema): fc.Arbitrary<unknown> {
  const allowed = typesOf(schema)
  const accepts = (type: string) =>
    allowed.includes(type) || (type === 'integer' && allowed.includes('number'))
  const candidates: [string, fc.Arbitrary<unknown>][] = [
    ['string', fc.constantFrom('12', '0x10', 'Infinity', 'true', '', 'null')],
    ['number', fc.constantFrom(12, 0.5, -1)],
    ['integer', fc.constantFrom(12, 0, -1)],
    ['boolean', fc.boolean()],
    ['null', fc.constant(null)],
    ['array', fc.constantFrom([], ['ab'], deeplyNested(DEEP_NESTING, 'array'))],
    ['object', fc.constantFrom({}, { value: 'ab' }, deeplyNested(DEEP_NESTING, 'object'))],
  ]
  const wrong = candidates.filter(([type]) => {
    if (type === 'number' || type === 'integer') return !accepts('number') && !accepts('integer')
    return !accepts(type)
  })
  return fc.oneof(...wrong.map(([, arbitrary]) => arbitrary))
}

/** Text with one bad character put into valid text: NUL, or half a surrogate pair. */
function unstorableText(schema: JsonSchema): fc.Arbitrary<string> {
  const max = Math.max(schema.maxLength ?? 50, 1)
  const around = textOfLength(0, Math.max(0, Math.min(max - 1, 20)))
  const bad = fc.constantFrom('\u0000', '\uD800', '\uDBFF', '\uDC00', '\uDFFF')
  return fc.tuple(around, bad, around).map(([before, character, after]) => {
    // A high half followed by a low one would be a whole character again.
    const tail = /^[\uDC00-\uDFFF]/.test(after) ? `x${after}` : after
    return `${before}${character}${tail}`
  })
}

function stringMutants(schema: JsonSchema, field?: string): fc.Arbitrary<Mutant>[] {
  const at = (flaw: string) => mutant(flaw, field)
  const min = schema.minLength ?? 0
  const max = schema.maxLength
  const options: fc.Arbitrary<Mutant>[] = [
    unstorableText(schema).map(at('NUL or unpaired surrogate')),
  ]
  if (min > 0) options.push(textOfLength(0, min - 1).map(at(`shorter than ${min}`)))
  if (max !== undefined) {
    options.push(textOfLength(max + 1, max + 20).map(at(`longer than ${max}`)))
    options.push(fc.constant('x'.repeat(HUGE_TEXT_LENGTH)).map(at('huge')))
  }
  const rules = rulesOf(schema.description)
  if (rules.includes('notBlank')) {
    const blank = fc.array(fc.constantFrom(' ', '\t', '\n', '\u00a0', '\u3000'), {
      minLength: Math.max(min, 1),
      maxLength: Math.max(min, Math.min(max ?? 10, 10)),
    })
    options.push(blank.map((characters) => characters.join('')).map(at('only whitespace')))
  }
  if (rules.includes('letterOrDigit')) {
    const symbols = fc.array(fc.constantFrom(' ', '%', '_', '-', '*', '.', '\u00a0'), {
      minLength: Math.max(min, 1),
      maxLength: Math.max(min, Math.min(max ?? 10, 10)),
    })
    options.push(symbols.map((characters) => characters.join('')).map(at('no letter or digit')))
  }
  if (schema.format === 'email') {
    options.push(
      fc.constantFrom('plain', 'a@', '@example.com', 'a b@example.com', 'a@b').map(at('not email')),
    )
  }
  return options
}

function numberMutants(schema: JsonSchema, field?: string): fc.Arbitrary<Mutant>[] {
  const at = (flaw: string) => mutant(flaw, field)
  const integer = typesOf(schema).includes('integer') && !typesOf(schema).includes('number')
  const { min, max } = integer
    ? integerBounds(schema)
    : {
        min: schema.exclusiveMinimum ?? schema.minimum,
        max: schema.exclusiveMaximum ?? schema.maximum,
      }
  const options: fc.Arbitrary<Mutant>[] = []
  if (min !== undefined && Number.isFinite(min)) {
    const below = schema.exclusiveMinimum !== undefined && !integer ? [min] : []
    const values = [...below, min - 1, min - 1e6, -(2 ** 31) - 1, -1e300].filter((n) => n <= min)
    options.push(fc.constantFrom(...values).map(at('below minimum')))
  }
  if (max !== undefined && Number.isFinite(max)) {
    const values = [max + 1, 2 ** 31, 2 ** 53, 1e300].filter((n) => n > max)
    options.push(fc.constantFrom(...values).map(at('above maximum')))
  }
  if (integer) {
    const low = min ?? 0
    options.push(fc.constantFrom(low + 0.5, low + 1e-9).map(at('not an integer')))
  }
  const step = schema.multipleOf
  if (step !== undefined) {
    const base = validValues(schema) as fc.Arbitrary<number>
    options.push(base.map((value) => value + step / 3).map(at(`not a multiple of ${step}`)))
  }
  if (rulesOf(schema.description).includes('cent')) {
    // Multiples of 0.01 as floating point sees them, and positive: yet 0.00 to the cent.
    options.push(fc.constantFrom(5e-324, 1e-300).map(at('below a cent once rounded')))
  }
  return options
}

function objectMutants(schema: JsonSchema, field?: string): fc.Arbitrary<Mutant>[] {
  const properties = schema.properties ?? {}
  const child = (name: string) => (field ? `${field}.${name}` : name)
  const base = validValues(schema) as fc.Arbitrary<Record<string, unknown>>
  const options: fc.Arbitrary<Mutant>[] = []
  const required = (schema.required ?? []).filter((name) => name in properties)
  if (required.length > 0) {
    options.push(
      fc.tuple(base, fc.constantFrom(...required)).map(([value, name]) => {
        const { [name]: _, ...rest } = value
        return { value: rest, flaw: `${child(name)}: missing`, field: child(name) }
      }),
    )
  }
  if (schema.additionalProperties === false) {
    const names = fc.oneof(
      fc.constantFrom('id', 'role', 'createdAt', 'deletedAt', 'Name', 'name '),
      fc.string({ minLength: 1, maxLength: 10 }),
    )
    options.push(
      fc
        .tuple(
          base,
          names.filter((name) => !(name in properties)),
          validValues({ type: 'string' }),
        )
        .map(([value, name, extra]) => ({
          value: { ...value, [name]: extra },
          flaw: `${child(name)}: not in the schema`,
          field: child(name),
        })),
    )
  }
  const names = Object.keys(properties)
  if (names.length > 0) {
    const broken = fc
      .constantFrom(...names)
      .chain((name) =>
        fc.tuple(
          base,
          fc.constant(name),
          invalidValues(properties[name] as JsonSchema, child(name)),
        ),
      )
    options.push(
      broken.map(([value, name, inner]) => ({
        ...inner,
        value: { ...value, [name]: inner.value },
      })),
    )
  }
  if (schema.minProperties !== undefined && schema.minProperties > 0) {
    options.push(fc.constant({ value: {}, flaw: 'no field at all', ...(field && { field }) }))
  }
  return options
}

function arrayMutants(schema: JsonSchema, field?: string): fc.Arbitrary<Mutant>[] {
  const at = (flaw: string) => mutant(flaw, field)
  const items = schema.items ?? {}
  const options: fc.Arbitrary<Mutant>[] = []
  if (schema.maxItems !== undefined) {
    options.push(
      fc
        .array(validValues(items), {
          minLength: schema.maxItems + 1,
          maxLength: schema.maxItems + 3,
        })
        .map(at(`more than ${schema.maxItems} items`)),
    )
  }
  if (schema.minItems) options.push(fc.constant([]).map(at(`fewer than ${schema.minItems} items`)))
  options.push(invalidValues(items, field).map((inner) => ({ ...inner, value: [inner.value] })))
  return options
}

/** Values that break the schema (or a rule its description states), each with its flaw. */
export function invalidValues(schema: JsonSchema, field?: string): fc.Arbitrary<Mutant> {
  const at = (flaw: string) => mutant(flaw, field)
  const types = typesOf(schema)
  const options: fc.Arbitrary<Mutant>[] = [wrongTypes(schema).map(at('wrong type'))]
  if (schema.enum || 'const' in schema) {
    const allowed = schemaValues(schema)
    options.push(
      fc
        .array(textCharacter, { minLength: 1, maxLength: 12 })
        .map((characters) => characters.join(''))
        .filter((text) => !allowed.includes(text))
        .map(at('not one of the allowed values')),
    )
  } else {
    if (types.includes('string')) options.push(...stringMutants(schema, field))
    if (types.includes('number') || types.includes('integer'))
      options.push(...numberMutants(schema, field))
    if (types.includes('object')) options.push(...objectMutants(schema, field))
    if (types.includes('array')) options.push(...arrayMutants(schema, field))
  }
  return fc.oneof(...options)
}
