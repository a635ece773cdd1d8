import fc from 'fast-check'
import {
  type GraphQLField,
  type GraphQLOutputType,
  getNamedType,
  isNonNullType,
  isObjectType,
} from 'graphql'
import type { RootField } from './graphql-schema.js'
import {
  type ArgumentMutant,
  argumentValues,
  invalidArgumentValues,
  literalOf,
} from './graphql-values.js'

/**
 * Arguments of fields below the root, by `Type.field` (`User.posts`), written into the
 * document as literals. A field that takes arguments is selected only when it has an
 * entry here (an empty one: its defaults).
 */
export type NestedArguments = Record<string, Record<string, unknown>>

/** A field a document selects, with the arguments it is given and what it selects below. */
export interface Selected {
  field: GraphQLField<unknown, unknown>
  args: Record<string, unknown>
  /** The fields selected in an object; undefined for a scalar or an enum. */
  below?: Selected[]
}

/**
 * The fields of the returned type a document selects: every one that takes no argument,
 * those that take some when `nested` has them, and objects two levels down.
 */
export function selectedFields(
  type: GraphQLOutputType,
  nested: NestedArguments = {},
  depth = 2,
): Selected[] {
  const named = getNamedType(type)
  if (!isObjectType(named)) return []
  return Object.values(named.getFields()).flatMap((field): Selected[] => {
    const args = field.args.length > 0 ? nested[`${named.name}.${field.name}`] : {}
    if (!args) return []
    if (!isObjectType(getNamedType(field.type))) return [{ field, args }]
    return depth > 1 ? [{ field, args, below: selectedFields(field.type, nested, depth - 1) }] : []
  })
}

/**
 * The fields below the root that take arguments and that a document may select, by
 * `Type.field`: each with arguments all optional (User.posts' `limit`).
 */
export function nestedFieldsOf(
  type: GraphQLOutputType,
  depth = 2,
): Map<string, GraphQLField<unknown, unknown>> {
  const found = new Map<string, GraphQLField<unknown, unknown>>()
  const named = getNamedType(type)
  if (!isObjectType(named)) return found
  for (const field of Object.values(named.getFields())) {
    const object = isObjectType(getNamedType(field.type))
    if (object && depth <= 1) continue
    const optional = field.args.every(
      (argument) => !isNonNullType(argument.type) || argument.defaultValue !== undefined,
    )
    if (field.args.length > 0 && optional) found.set(`${named.name}.${field.name}`, field)
    if (object)
      for (const [key, each] of nestedFieldsOf(field.type, depth - 1)) found.set(key, each)
  }
  return found
}

/** `{ id name posts(limit: 5) { id title } }` */
export function selectionOf(type: GraphQLOutputType, nested: NestedArguments = {}): string {
  const render = (fields: Selected[]): string =>
    `{ ${fields
      .map(({ field, args, below }) => {
        const given = field.args.filter((argument) => argument.name in args)
        const call = given.map(
          (argument) => `${argument.name}: ${literalOf(argument, args[argument.name])}`,
        )
        const head = call.length > 0 ? `${field.name}(${call.join(', ')})` : field.name
        return below ? `${head} ${render(below)}` : head
      })
      .join(' ')} }`
  const fields = selectedFields(type, nested)
  return fields.length > 0 ? render(fields) : ''
}

/**
 * The fields below the root that take arguments (User.posts): each left out of the
 * selection, or selected with values of its arguments.
 */
export function nestedValues(
  field: RootField,
  hints: Record<string, fc.Arbitrary<unknown>>,
): fc.Arbitrary<NestedArguments> {
  const fields = [...nestedFieldsOf(field.field.type)]
  const model = Object.fromEntries(
    fields.map(([key, each]) => {
      // Hinted as `users.User.posts.limit`: under the root field, by `Type.field.argument`.
      const own = Object.entries(hints)
        .filter(([name]) => name.startsWith(`${key}.`))
        .map(([name, values]) => [name.slice(key.length + 1), values])
      return [key, argumentValues(each.args, Object.fromEntries(own))]
    }),
  )
  return fc.record(model, { requiredKeys: [] }) as fc.Arbitrary<NestedArguments>
}

/**
 * One argument of a field below the root (User.posts' `limit`) of a wrong type or range,
 * with the argument's name.
 */
export function nestedFlaws(
  field: RootField,
  nested: NestedArguments,
): fc.Arbitrary<[NestedArguments, ArgumentMutant, string]> {
  const fields = [...nestedFieldsOf(field.field.type)]
  return fc
    .constantFrom(...fields)
    .chain(([key, each]) =>
      fc
        .constantFrom(...each.args)
        .chain((argument) =>
          invalidArgumentValues(argument).map(
            (mutant): [NestedArguments, ArgumentMutant, string] => [
              { ...nested, [key]: { ...nested[key], [argument.name]: mutant.value } },
              { ...mutant, flaw: `${key}.${mutant.flaw}` },
              argument.name,
            ],
          ),
        ),
    )
}
