import {
  type ASTVisitor,
  type DocumentNode,
  type FieldNode,
  GraphQLError,
  type GraphQLSchema,
  getNamedType,
  getNullableType,
  isListType,
  Kind,
  NoSchemaIntrospectionCustomRule,
  type OperationDefinitionNode,
  parse,
  specifiedRules,
  type ValidationContext,
  type ValidationRule,
  type ValueNode,
  validate,
} from 'graphql'
import { literalRangeErrors, variableRangeErrors } from './argument-ranges.js'
import {
  type FieldDefinition,
  fieldDefinition,
  fieldType,
  measureSelections,
} from './selections.js'

/**
 * What one operation, one response and one WebSocket may cost. Each figure lets the
 * largest legitimate use of schema.graphql through; the README's GraphQL section
 * documents them. The defaults of GraphQL Armor (maxTokens 1000, cost 5000) agree.
 */
export const LIMITS = {
  /** Nesting of selections, counting fragments where they are spread. */
  depth: 8,
  /** Aliased fields in one document: each alias can ask for the same work again. */
  aliases: 20,
  /**
   * Lexical tokens of a document, so a huge one is refused while it is read, not after.
   * The full introspection query is under 200.
   */
  tokens: 1000,
  /**
   * Values an operation may resolve (see maxCostRule): one page of the largest size,
   * `messages(limit: 1000) { id chatId text author createdAt }`, is 5000.
   */
  cost: 5000,
  /** The size assumed for a list field without a `limit` argument. */
  assumedListSize: 100,
  /**
   * Serialized bytes of one response, or of one WebSocket `next`/`data` payload: a page
   * of 1000 messages of 4000 four-byte characters (16.5 MB) still fits.
   */
  responseBytes: 16 * 1024 * 1024,
  /** Live subscriptions on one WebSocket, whichever subprotocol. */
  subscriptionsPerSocket: 100,
  /** How long a new WebSocket may wait before its connection_init: graphql-ws's default. */
  connectionInitMs: 3000,
  /**
   * Distinct documents kept parsed and checked, by Mercurius over HTTP (once for those
   * that pass, once for those refused, and each of its LRUs keeps the generation before
   * too), by the WebSocket's admission, and compiled for subscriptions. A document near
   * the token limit holds hundreds of kilobytes parsed (its every token and location), as
   * much compiled: with Mercurius's default of 1024, distinct ones sent by anyone grew an
   * instance's memory several times over (bench/MEASUREMENTS.md, 2026-12-01 22:40); with
   * 16 it barely grew. An application's own operations are fewer.
   */
  documentsKept: 16,
  /**
   * Automatic persisted queries kept: by each instance in memory, the newest first out;
   * and, with Redis, registered per PERSISTED_QUERY_TTL in it, so at most twice as many
   * live there (persisted-query-store.ts).
   */
  persistedQueries: 1024,
  /**
   * The longest document kept for APQ, in UTF-8 bytes: 1000 tokens, generously spaced. A
   * longer one still runs; it is sent in full each time. 1024 of them are 16 MiB.
   */
  persistedQueryBytes: 16 * 1024,
}

/** The argument that says how long a list is. */
const SIZE_ARGUMENT = 'limit'
/** The argument of a lookup by ids (`users(ids:)`): the list is as long as it. */
const IDS_ARGUMENT = 'ids'

/** Variables as sent; undefined while not known yet (each then counts as a page of one). */
export type Variables = Readonly<Record<string, unknown>> | undefined

export const limitError = (message: string, code = 'GRAPHQL_VALIDATION_FAILED') =>
  new GraphQLError(message, { extensions: { code } })

/** graphql's parser with the token limit: a longer document fails as a syntax error. */
export const parseOptions = { maxTokens: LIMITS.tokens }

export const parseOperation = (source: string) => parse(source, parseOptions)

export function maxDepthRule(maxDepth: number): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    const schema = context.getSchema()
    const depthOf = measureSelections(
      { schema, document: context.getDocument() },
      // Introspection is deep by nature (GraphiQL's own query nests types ~13 levels)
      // and bounded by the schema, so it is not counted.
      (field, parent, measure) => {
        if (field.name.value.startsWith('__')) return 0
        return 1 + (field.selectionSet ? measure(field.selectionSet, fieldType(parent, field)) : 0)
      },
      (depths) => Math.max(0, ...depths),
    )
    return {
      OperationDefinition(operation) {
        const root = schema.getRootType(operation.operation)
        const depth = root ? depthOf(operation.selectionSet, root) : 0
        if (depth > maxDepth) {
          context.reportError(
            limitError(`The operation is ${depth} levels deep; the limit is ${maxDepth}`),
          )
        }
      },
    }
  }
}

export function maxAliasesRule(maxAliases: number): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    let aliases = 0
    return {
      Field(field) {
        if (field.alias) aliases += 1
      },
      Document: {
        leave() {
          if (aliases > maxAliases) {
            context.reportError(
              limitError(`The document has ${aliases} aliases; the limit is ${maxAliases}`),
            )
          }
        },
      },
    }
  }
}

/**
 * The values an operation may resolve: a field is 1, or what is selected under it; a
 * list multiplies that by its `limit` (the schema's default when absent), by the number
 * of `ids` of a lookup by ids, or by LIMITS.assumedListSize for any other list. Aliases
 * and fragments count where they are used; `__typename` and introspection cost nothing.
 */
export function maxCostRule(maxCost: number, variables: Variables): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    const within = { schema: context.getSchema(), document: context.getDocument() }
    return {
      OperationDefinition(operation) {
        const error = overCost(within, operation, variables, maxCost)
        if (error) context.reportError(error)
      },
    }
  }
}

interface Operations {
  schema: GraphQLSchema
  document: DocumentNode
}

/** The error of an operation that costs more than `maxCost`; undefined within it. */
function overCost(
  within: Operations,
  operation: OperationDefinitionNode,
  variables: Variables,
  maxCost: number,
) {
  const cost = costOf(within, operation, variables)
  return cost <= maxCost ? undefined : overCostError(cost, maxCost)
}

const overCostError = (cost: number, maxCost: number) =>
  limitError(
    `The operation costs ${cost}; the limit is ${maxCost}. A list costs its \`limit\` ` +
      'times what is selected in it: ask for fewer items or fewer fields',
  )

/** What an operation may resolve; the names of the variables it read go into `reads`. */
function costOf(
  within: Operations,
  operation: OperationDefinitionNode,
  variables: Variables,
  reads?: Set<string>,
) {
  const root = within.schema.getRootType(operation.operation)
  if (!root) return 0
  const sizeOf = listSizes(operation, variables, reads)
  const measure = measureSelections(
    within,
    (field, parent, measure) => {
      const definition = fieldDefinition(parent, field)
      if (!definition || field.name.value.startsWith('__')) return 0
      const below = field.selectionSet
        ? measure(field.selectionSet, getNamedType(definition.type))
        : 0
      const size = isListType(getNullableType(definition.type)) ? sizeOf(field, definition) : 1
      return size * Math.max(1, below)
    },
    (costs) => costs.reduce((sum, cost) => sum + cost, 0),
  )
  return measure(operation.selectionSet, root)
}

/** An Int literal's value; other values are graphql's to refuse, or a variable's to give. */
const intOf = (node: ValueNode | undefined) =>
  node?.kind === Kind.INT ? Number.parseInt(node.value, 10) : undefined

/** How many items a list field asks for, with the operation's variables. */
function listSizes(operation: OperationDefinitionNode, variables: Variables, reads?: Set<string>) {
  const defaults = new Map(
    (operation.variableDefinitions ?? []).map((definition) => [
      definition.variable.name.value,
      intOf(definition.defaultValue),
    ]),
  )
  const variableValue = (name: string) => {
    reads?.add(name)
    // Not known yet: the smallest page, so the check only refuses what every value would.
    if (variables === undefined) return 1
    return name in variables ? variables[name] : defaults.get(name)
  }
  /** How many ids a lookup names; undefined when the field takes none. */
  const idsNamed = (field: FieldNode) => {
    const node = field.arguments?.find((each) => each.name.value === IDS_ARGUMENT)?.value
    if (node?.kind === Kind.LIST) return node.values.length
    if (node?.kind !== Kind.VARIABLE) return node && 1
    const value = variableValue(node.name.value)
    return Array.isArray(value) ? value.length : 1
  }
  return (field: FieldNode, definition: FieldDefinition) => {
    const argument = definition.args.find((each) => each.name === SIZE_ARGUMENT)
    if (!argument) return idsNamed(field) ?? LIMITS.assumedListSize
    const node = field.arguments?.find((each) => each.name.value === SIZE_ARGUMENT)?.value
    const given = node?.kind === Kind.VARIABLE ? variableValue(node.name.value) : intOf(node)
    const size = given ?? argument.defaultValue
    // A value of the wrong type is refused by graphql itself; it costs a default page here.
    return typeof size === 'number' && Number.isFinite(size)
      ? Math.max(0, size)
      : LIMITS.assumedListSize
  }
}

/** What the operator decides of the rules (see Config). */
export interface RuleSettings {
  /** Answers `__schema` and `__type`; off, they are refused like an unknown field. */
  introspection: boolean
}

/** The service's own rules, with the variables when they are known. */
const limitRules = (variables: Variables, { introspection }: RuleSettings) => [
  maxDepthRule(LIMITS.depth),
  maxAliasesRule(LIMITS.aliases),
  maxCostRule(LIMITS.cost, variables),
  ...(introspection ? [] : [NoSchemaIntrospectionCustomRule]),
]

/**
 * The service's rules alone: cheap and linear, so they run before graphql's own rules.
 * An argument out of its range is refused first, alone, whatever the cost would be.
 */
export function limitErrors(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Variables,
  settings: RuleSettings,
) {
  const outOfRange = literalRangeErrors(schema, document)
  if (outOfRange.length > 0) return outOfRange
  return validate(schema, document, limitRules(variables, settings))
}

/** Whether a document declares variables: only then can its cost change with their values. */
const usesVariables = (document: DocumentNode) =>
  document.definitions.some(
    (definition) => 'variableDefinitions' in definition && definition.variableDefinitions?.length,
  )

/**
 * The ranges of arguments given by variables, then the cost, once the variables are
 * known (HTTP: see plugin.ts; WebSocket: see admission.ts). A document without variables
 * was checked in full before them, so only one that declares some is checked again. Its
 * cost depends on its variables only through the values of those that give a list's
 * size, so it is walked once per document and per such values: Mercurius hands the same
 * parsed document to every execution of a query.
 */
export function createVariablesCheck() {
  const documents = new WeakMap<DocumentNode, { reads: string[]; costs: Map<string, number[]> }>()
  return (schema: GraphQLSchema, document: DocumentNode, variables: NonNullable<Variables>) => {
    if (!usesVariables(document)) return []
    const outOfRange = variableRangeErrors(schema, document, variables)
    if (outOfRange.length > 0) return outOfRange
    const within = { schema, document }
    let known = documents.get(document)
    if (!known) {
      const reads = new Set<string>()
      const costs = operationCosts(within, variables, reads)
      known = { reads: [...reads], costs: new Map([[sizesKey(reads, variables), costs]]) }
      documents.set(document, known)
    }
    const key = sizesKey(known.reads, variables)
    let costs = known.costs.get(key)
    if (!costs) {
      costs = operationCosts(within, variables)
      if (known.costs.size < SIZES_KEPT) known.costs.set(key, costs)
    }
    return costs
      .filter((cost) => cost > LIMITS.cost)
      .map((cost) => overCostError(cost, LIMITS.cost))
  }
}

/**
 * The variables' values as listSizes tells them apart: a number, an array's length, null
 * or absent, or anything else (which costs a default page).
 */
const sizesKey = (reads: Iterable<string>, variables: Variables) =>
  Array.from(reads, (name) => {
    if (variables === undefined || !(name in variables)) return 'absent'
    const value = variables[name]
    if (typeof value === 'number') return String(value)
    if (Array.isArray(value)) return `[${value.length}]`
    return value == null ? 'null' : 'other'
  }).join()

/** Costs remembered per document, for its most common sizes; others are walked each time. */
const SIZES_KEPT = 16

/** The cost of each operation of a document. */
const operationCosts = (within: Operations, variables: Variables, reads?: Set<string>) =>
  within.document.definitions
    .filter((definition) => definition.kind === Kind.OPERATION_DEFINITION)
    .map((operation) => costOf(within, operation, variables, reads))

/**
 * Our limits, then graphql's rules: what every document passes, whatever carries it,
 * before its variables are known (see createCostCheck for them). A document over a limit
 * never reaches graphql's rules, some of which grow with the square of repeated fields.
 */
export function validateDocument(
  schema: GraphQLSchema,
  document: DocumentNode,
  settings: RuleSettings,
) {
  const errors = limitErrors(schema, document, undefined, settings)
  return errors.length > 0 ? errors : validate(schema, document, specifiedRules)
}
