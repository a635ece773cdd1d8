import fc from 'fast-check'
import { integerBounds, type JsonSchema, textOfLength } from '../schema-arbitrary.js'
import { brokenRules } from './documented-rules.js'

/**
 * Path, query and header values travel as text. Numbers in a URL are decimal: hex,
 * `Infinity`, padding, a sign, a fraction for an integer, or digits that overflow a
 * double are not numbers there, whatever JavaScript's Number() makes of them.
 */
const DECIMAL = {
  integer: /^-?\d+$/,
  number: /^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/,
}

/** Whether `text` is a value of the schema as a URL carries it. */
export function isValidParameterText(schema: JsonSchema, text: string): boolean {
  const type = [schema.type].flat()[0]
  if (type === 'integer' || type === 'number') {
    if (!DECIMAL[type].test(text)) return false
    const value = Number(text)
    if (!Number.isFinite(value)) return false
    const { min, max } = type === 'integer' ? integerBounds(schema) : numberBounds(schema)
    return value >= min && value <= max && (type === 'number' || Number.isSafeInteger(value))
  }
  if (type === 'boolean') return text === 'true' || text === 'false'
  if (schema.enum) return schema.enum.includes(text)
  if (schema.pattern && !new RegExp(schema.pattern, 'u').test(text)) return false
  const length = [...text].length
  return (
    length >= (schema.minLength ?? 0) &&
    length <= (schema.maxLength ?? Number.POSITIVE_INFINITY) &&
    brokenRules(schema.description, text).length === 0
  )
}

function numberBounds(schema: JsonSchema) {
  const epsilon = Number.MIN_VALUE
  return {
    min:
      schema.exclusiveMinimum !== undefined
        ? schema.exclusiveMinimum + epsilon
        : (schema.minimum ?? Number.NEGATIVE_INFINITY),
    max:
      schema.exclusiveMaximum !== undefined
        ? schema.exclusiveMaximum - epsilon
        : (schema.maximum ?? Number.POSITIVE_INFINITY),
  }
}

/** A parameter's value as it goes into a URL, and what is wrong with it. */
export interface TextMutant {
  /** Percent-encoded already: some mutants are bytes no encoder would write. */
  encoded: string
  flaw: string
  /**
   * False where a server may read the bytes leniently (a malformed escape in a query
   * string is taken literally): then only the general rules hold, not a refusal.
   */
  refused: boolean
}

const NUMERIC_ODDITIES = [
  '0x10',
  '0X1f',
  '0b1',
  '0o7',
  'Infinity',
  '-Infinity',
  'NaN',
  ' 1',
  '1 ',
  '+1',
  '1.0',
  '1.5',
  '1e3',
  '1e400',
  '-1e400',
  '1_000',
  '1,5',
  '',
  '-',
  '.',
  '--1',
  '\u0663', // ARABIC-INDIC DIGIT THREE
  '\uff11', // FULLWIDTH DIGIT ONE
  '9'.repeat(30),
  '1'.repeat(400),
  // Past the router's longest segment, and longer than an error message may quote.
  '9'.repeat(3000),
]

/** Texts that break the parameter's schema or a documented rule, as they travel in a URL. */
export function invalidParameterTexts(
  schema: JsonSchema,
  location: 'path' | 'query' | 'header',
): fc.Arbitrary<TextMutant> {
  const type = [schema.type].flat()[0]
  if (location === 'header') return invalidHeaderTexts(schema)
  const plain = (flaw: string) => (text: string) => ({
    encoded: encodeURIComponent(text),
    flaw,
    refused: true,
  })
  const options: fc.Arbitrary<TextMutant>[] = []
  if (type === 'integer' || type === 'number') {
    const { min, max } = type === 'integer' ? integerBounds(schema) : numberBounds(schema)
    const outside = [min - 1, max + 1, min - 0.5].filter(Number.isFinite).map(String)
    const texts = [...NUMERIC_ODDITIES, ...outside].filter(
      (text) => !isValidParameterText(schema, text),
    )
    options.push(fc.constantFrom(...texts).map(plain('not a decimal number in range')))
  } else {
    options.push(
      fc
        .tuple(textOfLength(0, 5), textOfLength(0, 5))
        .map(([before, after]) => `${before}\u0000${after}`)
        .map(plain('NUL')),
    )
    const invalidText = (text: string) => !isValidParameterText(schema, text)
    if (schema.maxLength !== undefined) {
      const max = schema.maxLength
      options.push(textOfLength(max + 1, max + 10).map(plain(`longer than ${max}`)))
    }
    options.push(
      fc
        .constantFrom('', ' ', '%', '_', '--', '\u00a0\u3000')
        .filter(invalidText)
        .map(plain('too short or a documented rule broken')),
    )
  }
  // Escapes that do not decode to UTF-8: a path is refused as a bad URL, a query string
  // may take them literally.
  const lenient = location === 'query' && type === 'string'
  options.push(
    fc
      .constantFrom('%', '%zz', '%E0%A4%A', '%ED%A0%80', '%C0%AF', '%FF')
      .map((encoded) => ({ encoded, flaw: 'malformed escape', refused: !lenient })),
  )
  return fc.oneof(...options)
}

/** Headers carry visible ASCII only (fetch refuses the rest): too long is what is left. */
function invalidHeaderTexts(schema: JsonSchema): fc.Arbitrary<TextMutant> {
  const max = schema.maxLength ?? 8 * 1024
  return fc.integer({ min: max + 1, max: max + 100 }).map((length) => ({
    encoded: `"${'x'.repeat(length - 2)}"`,
    flaw: `longer than ${max}`,
    refused: true,
  }))
}
