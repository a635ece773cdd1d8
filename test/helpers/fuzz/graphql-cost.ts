import { type GraphQLField, getNullableType, isListType } from 'graphql'
import { type Selected, selectedFields } from './graphql-nested.js'
import type { GraphqlRequest } from './graphql-requests.js'
import type { RootField } from './graphql-schema.js'

/**
 * The cost README.md documents: a field is 1, or what is selected under it; a list
 * multiplies that by its `limit` (the argument's default when absent or null), by the
 * number of `ids` of a lookup by ids (`users`), or by 100 for any other list. Over
 * MAX_COST, an operation is refused (GRAPHQL_VALIDATION_FAILED) before it runs.
 */
export const MAX_COST = 5000
const LIST_WITHOUT_LIMIT = 100

function listSize(field: GraphQLField<unknown, unknown>, args: Record<string, unknown>) {
  const argument = field.args.find((each) => each.name === 'limit')
  if (!argument && field.args.some((each) => each.name === 'ids')) {
    return Array.isArray(args.ids) ? args.ids.length : 1
  }
  if (!argument) return LIST_WITHOUT_LIMIT
  const size = typeof args.limit === 'number' ? args.limit : argument.defaultValue
  return typeof size === 'number' ? Math.max(0, size) : LIST_WITHOUT_LIMIT
}

function fieldCost({ field, args, below }: Selected): number {
  const inner = (below ?? []).reduce((sum, each) => sum + fieldCost(each), 0)
  const size = isListType(getNullableType(field.type)) ? listSize(field, args) : 1
  return size * Math.max(1, inner)
}

/**
 * What a request's document costs. Checked twice: first before its variables are known
 * (each then counts as 1), before the caller's token is read; then with their values.
 */
export function costOf(field: RootField, request: GraphqlRequest, variablesKnown: boolean) {
  const { variables } = request.body as { variables?: Record<string, unknown> }
  const unknown = variablesKnown
    ? {}
    : Object.fromEntries(Object.keys(variables ?? {}).map((name) => [name, 1]))
  const below = selectedFields(field.field.type, request.nested)
  return fieldCost({ field: field.field, args: { ...request.args, ...unknown }, below })
}
