import { readFileSync } from 'node:fs'
import { buildSchema, type GraphQLArgument, type GraphQLField, getDirectiveValues } from 'graphql'
import { graphqlSchemaPath } from '../../../src/paths.js'

/** schema.graphql, as clients read it. */
export const graphqlSchema = buildSchema(readFileSync(graphqlSchemaPath, 'utf8'))

export type RootKind = 'query' | 'mutation' | 'subscription'

export interface RootField {
  kind: RootKind
  field: GraphQLField<unknown, unknown>
}

/** Every root field of every operation type, the fields the fuzz suite drives. */
export const rootFields: RootField[] = (
  [
    ['query', graphqlSchema.getQueryType()],
    ['mutation', graphqlSchema.getMutationType()],
    ['subscription', graphqlSchema.getSubscriptionType()],
  ] as const
).flatMap(([kind, type]) =>
  type ? Object.values(type.getFields()).map((field) => ({ kind, field })) : [],
)

/** The range schema.graphql declares for an argument with `@range(min, max)`, if any. */
export function declaredRange(argument: GraphQLArgument): { min: number; max: number } | undefined {
  const directive = graphqlSchema.getDirective('range')
  const node = argument.astNode
  return directive && node
    ? (getDirectiveValues(directive, node) as { min: number; max: number } | undefined)
    : undefined
}

/** An argument of a root field, by the field's and the argument's names. */
export function argumentOf(fieldName: string, argumentName: string): GraphQLArgument {
  const found = rootFields
    .find(({ field }) => field.name === fieldName)
    ?.field.args.find((argument) => argument.name === argumentName)
  if (!found) throw new Error(`schema.graphql has no argument ${fieldName}(${argumentName})`)
  return found
}
