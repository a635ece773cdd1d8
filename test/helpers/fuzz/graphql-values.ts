import fc from 'fast-check'
import {
  type GraphQLArgument,
  type GraphQLInputType,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
} from 'graphql'
import { textOfLength } from '../schema-arbitrary.js'
import { brokenRules, documentedRange, rulesOf } from './documented-rules.js'
import { declaredRange } from './graphql-schema.js'

const INT32 = { min: -(2 ** 31), max: 2 ** 31 - 1 }
/** Text of a String or ID whose description states no length. */
const ANY_TEXT = { min: 0, max: 150 }

/** What an argument's description adds to its type: a range, and the rules it names. */
interface Documented {
  range?: { min: number; max: number }
  description?: string | null
}

const documentedOf = (argument: GraphQLArgument): Documented => {
  const range = documentedRange(argument.description)
  return { ...(range && { range }), description: argument.description ?? null }
}

/** Values of an input type, within what the argument's description documents. */
export function valuesOfType(
  type: GraphQLInputType,
  documented: Documented = {},
): fc.Arbitrary<unknown> {
  if (isNonNullType(type)) return presentValues(type.ofType, documented)
  const values = presentValues(type, documented)
  return fc.oneof({ weight: 4, arbitrary: values }, { weight: 1, arbitrary: fc.constant(null) })
}

function presentValues(type: GraphQLInputType, documented: Documented): fc.Arbitrary<unknown> {
  if (isListType(type)) {
    // A range documents how many items ("1 to 100 user ids"); a few are enough.
    const min = documented.range?.min ?? 0
    const max = Math.min(documented.range?.max ?? 5, min + 5)
    return fc.array(valuesOfType(type.ofType), { minLength: min, maxLength: max })
  }
  if (isEnumType(type)) return fc.constantFrom(...type.getValues().map((each) => each.name))
  if (isInputObjectType(type)) {
    const fields = Object.values(type.getFields())
    return fc.record(
      Object.fromEntries(
        fields.map((field) => [field.name, valuesOfType(field.type, documentedOf(field))]),
      ),
      {
        requiredKeys: fields.filter((field) => isNonNullType(field.type)).map((each) => each.name),
      },
    )
  }
  if (!isScalarType(type)) throw new Error(`graphql-values: unknown input type ${String(type)}`)
  const { min, max } = documented.range ?? (type.name === 'Int' ? INT32 : ANY_TEXT)
  switch (type.name) {
    case 'String':
      return textOfLength(min, max)
    case 'ID':
      // An ID is text, and clients may send it as an integer.
      return fc.oneof(textOfLength(Math.max(min, 0), max), fc.nat({ max: INT32.max }))
    case 'Int':
      return fc.integer({ min, max })
    case 'Float':
      return fc.double({ noNaN: true, noDefaultInfinity: true })
    case 'Boolean':
      return fc.boolean()
    default:
      throw new Error(`graphql-values: unknown scalar ${type.name}`)
  }
}

/** Values of every argument of a field: required ones always, the others sometimes. */
export function argumentValues(
  argumentsOfField: readonly GraphQLArgument[],
  hints: Record<string, fc.Arbitrary<unknown>> = {},
): fc.Arbitrary<Record<string, unknown>> {
  const model = Object.fromEntries(
    argumentsOfField.map((argument) => [
      argument.name,
      hints[argument.name] ?? valuesOfType(argument.type, documentedOf(argument)),
    ]),
  )
  const requiredKeys = argumentsOfField
    .filter((argument) => isNonNullType(argument.type) && argument.defaultValue === undefined)
    .map((argument) => argument.name)
  return fc.record(model, { requiredKeys })
}

/**
 * The arguments whose values fit their types but break what their descriptions state
 * ("1 to 4000 characters", "not only whitespace"), or cannot be stored.
 */
export function argumentsBreakingRules(
  argumentsOfField: readonly GraphQLArgument[],
  values: Record<string, unknown>,
): string[] {
  return argumentsOfField
    .filter((argument) => {
      const value = values[argument.name]
      if (brokenRules(argument.description, value).length > 0) return true
      const range = documentedRange(argument.description)
      if (!range) return false
      // A list is measured in items, text in characters; an ID sent as an integer is text.
      const named = getNamedType(argument.type)
      const textual = named.name === 'String' || named.name === 'ID'
      const size = Array.isArray(value)
        ? value.length
        : textual && value != null
          ? [...String(value)].length
          : value
      return typeof size === 'number' && (size < range.min || size > range.max)
    })
    .map((argument) => argument.name)
}

/** A value that breaks an argument's type or its documented rules, and what is wrong. */
export interface ArgumentMutant {
  value: unknown
  flaw: string
  /**
   * Against the argument's type (always refused), the range schema.graphql declares for
   * it (refused before anything else reads the document), or only its documented rules.
   */
  breaks: 'type' | 'range' | 'rule'
}

function wrongTypes(type: GraphQLInputType): unknown[] {
  const named = isNonNullType(type) ? type.ofType : type
  const nullable = isNonNullType(type) ? [null] : []
  if (isListType(named)) {
    // One item stands for a list of it: wrong as an item, and wrong in a list.
    const items = wrongTypes(named.ofType)
    const alone = items.filter((item) => item !== null && !Array.isArray(item))
    return [...nullable, ...alone, ...items.map((item) => [item])]
  }
  if (isInputObjectType(named) || isEnumType(named)) return [...nullable, 12]
  switch (isScalarType(named) ? named.name : '') {
    case 'Int':
      return [...nullable, '1', 1.5, 2 ** 31, true, [1], { n: 1 }]
    case 'Float':
      return [...nullable, '1.5', true, [1]]
    case 'Boolean':
      return [...nullable, 'true', 1]
    default:
      // String and ID: ID takes integers, neither takes the rest.
      return [...nullable, true, 1.5, ['a'], { a: 'b' }]
  }
}

/** Values of an argument that must be refused (and so store nothing). */
export function invalidArgumentValues(argument: GraphQLArgument): fc.Arbitrary<ArgumentMutant> {
  const at =
    (flaw: string, breaks: ArgumentMutant['breaks'] = 'rule') =>
    (value: unknown): ArgumentMutant => ({ value, flaw: `${argument.name}: ${flaw}`, breaks })
  const options: fc.Arbitrary<ArgumentMutant>[] = [
    fc.constantFrom(...wrongTypes(argument.type)).map(at('wrong type', 'type')),
  ]
  const named = isNonNullType(argument.type) ? argument.type.ofType : argument.type
  const textual = isScalarType(named) && (named.name === 'String' || named.name === 'ID')
  const range = documentedRange(argument.description)
  // A size out of the range `@range` declares is refused with the document; the
  // description states the same range (test/argument-ranges.test.ts).
  const sizeFlaw = declaredRange(argument) ? 'range' : 'rule'
  if (textual) {
    const bad = fc.constantFrom('\u0000', '\uD800', '\uDFFF')
    options.push(
      fc
        .tuple(textOfLength(0, 5), bad, textOfLength(1, 5))
        .map(([a, c, b]) => `${a}${c}x${b}`)
        .map(at('unstorable')),
    )
    if (range) {
      if (range.min > 0) options.push(textOfLength(0, range.min - 1).map(at('too short')))
      options.push(textOfLength(range.max + 1, range.max + 10).map(at('too long')))
    }
    if (rulesOf(argument.description).includes('notBlank')) {
      options.push(fc.constantFrom(' ', '\t\n', '\u3000 ').map(at('only whitespace')))
    }
  } else if (isListType(named) && range) {
    const many = Array.from({ length: range.max + 1 }, (_, i) => String(i + 1))
    options.push(
      fc
        .constantFrom<unknown[]>([], many)
        .filter((list) => list.length < range.min || list.length > range.max)
        .map(at('too few or too many items', sizeFlaw)),
    )
  } else if (isScalarType(named) && named.name === 'Int' && range) {
    options.push(
      fc
        .constantFrom(range.min - 1, range.max + 1, -1, 0)
        .filter((n) => n < range.min || n > range.max)
        .map(at('out of range', sizeFlaw)),
    )
  }
  return fc.oneof(...options)
}

/**
 * A value written as a GraphQL literal, as it is: strings as JSON writes them (GraphQL
 * reads the same escapes), never coerced to the argument's type, so a wrong one stays
 * wrong.
 */
export function literalOf(argument: GraphQLArgument, value: unknown): string {
  if (typeof value === 'string' && isEnumType(getNamedType(argument.type))) return value
  return rawLiteral(value)
}

function rawLiteral(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(rawLiteral).join(', ')}]`
  if (value !== null && typeof value === 'object') {
    const fields = Object.entries(value).map(([key, each]) => `${key}: ${rawLiteral(each)}`)
    return `{${fields.join(', ')}}`
  }
  return value === undefined ? 'null' : JSON.stringify(value)
}
