import {
  type ArgumentNode,
  type DocumentNode,
  type GraphQLArgument,
  GraphQLError,
  type GraphQLSchema,
  getDirectiveValues,
  getNullableType,
  isListType,
  Kind,
  TypeInfo,
  type ValueNode,
  valueFromASTUntyped,
  visit,
  visitWithTypeInfo,
} from 'graphql'
import type { Variables } from './limits.js'

/**
 * The ranges of arguments, declared once, in schema.graphql, with `@range(min, max)`: an
 * Int's value, or the length of a list. A value outside its range is the client's to fix,
 * whatever the operation would cost, so these checks come before the cost rule (and every
 * other limit) in limits.ts; the resolvers then take the value as it is.
 */
const RANGE_DIRECTIVE = 'range'

interface Range {
  min: number
  max: number
}

/** One argument with a range, as a document gives it. */
interface RangedArgument {
  name: string
  range: Range
  /** A list's length is its size; an Int's value otherwise. */
  list: boolean
  node: ArgumentNode
}

interface DocumentRanges {
  arguments: RangedArgument[]
  /** The default of each variable that has one, by name. */
  defaults: Map<string, unknown>
}

/** The arguments given a literal out of range: checked before the variables are known. */
export const literalRangeErrors = (schema: GraphQLSchema, document: DocumentNode) =>
  rangeErrors(schema, document, undefined)

/** The arguments given a variable whose value is out of range. */
export const variableRangeErrors = (
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: NonNullable<Variables>,
) => rangeErrors(schema, document, variables)

function rangeErrors(schema: GraphQLSchema, document: DocumentNode, variables: Variables) {
  const ranges = rangesOf(schema, document)
  const sizeOf = ({ node: { value }, list }: RangedArgument) => {
    if (value.kind !== Kind.VARIABLE) return sizeOfLiteral(value, list)
    const name = value.name.value
    return sizeOfValue(
      variables && name in variables ? variables[name] : ranges.defaults.get(name),
      list,
    )
  }
  return ranges.arguments.flatMap((argument) => {
    // Literals are checked with the document, variables once they are known.
    const byVariable = argument.node.value.kind === Kind.VARIABLE
    if (byVariable !== (variables !== undefined)) return []
    const size = sizeOf(argument)
    const { min, max } = argument.range
    return size === undefined || (size >= min && size <= max) ? [] : [outOfRange(argument)]
  })
}

function outOfRange({ name, range, list, node }: RangedArgument): GraphQLError {
  const problem = list
    ? `must hold ${range.min} to ${range.max} items`
    : `must be from ${range.min} to ${range.max}`
  return new GraphQLError(`${name} ${problem}`, {
    nodes: [node],
    extensions: { code: 'BAD_USER_INPUT', details: { [name]: [problem] } },
  })
}

/**
 * The size a literal asks for; undefined for null, or a value of another type, which
 * graphql's own rules refuse. A list argument given one item is a list of one.
 */
function sizeOfLiteral(value: ValueNode, list: boolean): number | undefined {
  if (list) {
    if (value.kind === Kind.LIST) return value.values.length
    return value.kind === Kind.NULL ? undefined : 1
  }
  return value.kind === Kind.INT ? Number.parseInt(value.value, 10) : undefined
}

/** The size a variable's value asks for, as sizeOfLiteral reads literals. */
function sizeOfValue(value: unknown, list: boolean): number | undefined {
  if (value === undefined || value === null) return undefined
  if (list) return Array.isArray(value) ? value.length : 1
  return Number.isInteger(value) ? (value as number) : undefined
}

/**
 * A document's ranged arguments are found once: Mercurius hands the same parsed one
 * again (its documents are parsed for one schema, as the cost check has them).
 */
const documentRanges = new WeakMap<DocumentNode, DocumentRanges>()

function rangesOf(schema: GraphQLSchema, document: DocumentNode): DocumentRanges {
  let ranges = documentRanges.get(document)
  if (!ranges) {
    ranges = findRanges(schema, document)
    documentRanges.set(document, ranges)
  }
  return ranges
}

function findRanges(schema: GraphQLSchema, document: DocumentNode): DocumentRanges {
  const found: DocumentRanges = { arguments: [], defaults: new Map() }
  const typeInfo = new TypeInfo(schema)
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Argument(node) {
        const argument = typeInfo.getArgument()
        const range = argument ? rangeOf(schema, argument) : undefined
        if (!argument || !range) return
        const list = isListType(getNullableType(argument.type))
        found.arguments.push({ name: argument.name, range, list, node })
      },
      VariableDefinition(node) {
        if (node.defaultValue) {
          found.defaults.set(node.variable.name.value, valueFromASTUntyped(node.defaultValue))
        }
      },
    }),
  )
  return found
}

function rangeOf(schema: GraphQLSchema, argument: GraphQLArgument): Range | undefined {
  const directive = schema.getDirective(RANGE_DIRECTIVE)
  const node = argument.astNode
  return directive && node ? (getDirectiveValues(directive, node) as Range | undefined) : undefined
}
