import {
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLNamedType,
  type GraphQLSchema,
  getNamedType,
  isInterfaceType,
  isObjectType,
  Kind,
  type SelectionSetNode,
} from 'graphql'

/**
 * Walks what an operation selects, fragments where they are spread. A fragment's
 * measure is taken once and reused: one spread twice per level would otherwise make
 * the walk exponential in the number of fragments.
 */
export function measureSelections(
  { schema, document }: { schema: GraphQLSchema; document: DocumentNode },
  measureField: (field: FieldNode, parent: GraphQLNamedType, measure: Measure) => number,
  combine: (values: number[]) => number,
) {
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION)
      fragments.set(definition.name.value, definition)
  }
  const measured = new Map<string, number>()
  const measure: Measure = (selectionSet, parent) =>
    combine(
      selectionSet.selections.map((selection) => {
        if (selection.kind === Kind.FIELD) return measureField(selection, parent, measure)
        if (selection.kind === Kind.INLINE_FRAGMENT) {
          const type = selection.typeCondition && schema.getType(selection.typeCondition.name.value)
          return measure(selection.selectionSet, type ?? parent)
        }
        const name = selection.name.value
        const fragment = fragments.get(name)
        const type = fragment && schema.getType(fragment.typeCondition.name.value)
        // Unknown fragments and cycles are reported by graphql's own rules; a fragment
        // being measured counts 0 where it spreads itself.
        if (!fragment || !type || measured.has(name)) return measured.get(name) ?? 0
        measured.set(name, 0)
        const value = measure(fragment.selectionSet, type)
        measured.set(name, value)
        return value
      }),
    )
  return measure
}

type Measure = (selectionSet: SelectionSetNode, parent: GraphQLNamedType) => number

export type FieldDefinition = NonNullable<ReturnType<typeof fieldDefinition>>

export function fieldDefinition(parent: GraphQLNamedType, field: FieldNode) {
  return isObjectType(parent) || isInterfaceType(parent)
    ? parent.getFields()[field.name.value]
    : undefined
}

export const fieldType = (parent: GraphQLNamedType, field: FieldNode) => {
  const definition = fieldDefinition(parent, field)
  return definition ? getNamedType(definition.type) : parent
}
