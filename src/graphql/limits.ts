import {
  type ASTVisitor,
  type DocumentNode,
  type FragmentDefinitionNode,
  GraphQLError,
  type GraphQLSchema,
  Kind,
  type SelectionSetNode,
  specifiedRules,
  type ValidationContext,
  type ValidationRule,
  validate,
} from 'graphql'

export const LIMITS = {
  /** Nesting of selections, counting fragments where they are spread. */
  depth: 8,
  /** Aliased fields in one document: each alias can ask for the same work again. */
  aliases: 20,
}

const limitError = (message: string) =>
  new GraphQLError(message, { extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } })

export function maxDepthRule(maxDepth: number): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    const fragments = new Map<string, FragmentDefinitionNode>()
    for (const definition of context.getDocument().definitions) {
      if (definition.kind === Kind.FRAGMENT_DEFINITION)
        fragments.set(definition.name.value, definition)
    }
    const depthOf = (selectionSet: SelectionSetNode, seen: Set<string>): number => {
      let deepest = 0
      for (const selection of selectionSet.selections) {
        if (selection.kind === Kind.FIELD) {
          // Introspection is deep by nature (GraphiQL's own query nests types ~13 levels)
          // and bounded by the schema, so it is not counted.
          if (selection.name.value.startsWith('__')) continue
          const below = selection.selectionSet ? depthOf(selection.selectionSet, seen) : 0
          deepest = Math.max(deepest, 1 + below)
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          deepest = Math.max(deepest, depthOf(selection.selectionSet, seen))
        } else {
          const fragment = fragments.get(selection.name.value)
          // A cycle is reported by graphql's own NoFragmentCycles rule.
          if (!fragment || seen.has(fragment.name.value)) continue
          const next = new Set(seen).add(fragment.name.value)
          deepest = Math.max(deepest, depthOf(fragment.selectionSet, next))
        }
      }
      return deepest
    }
    return {
      OperationDefinition(operation) {
        const depth = depthOf(operation.selectionSet, new Set())
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

export const limitRules = [maxDepthRule(LIMITS.depth), maxAliasesRule(LIMITS.aliases)]

/** graphql's own rules and ours: what every operation passes, whatever carries it. */
export const validateOperation = (schema: GraphQLSchema, document: DocumentNode) =>
  validate(schema, document, [...specifiedRules, ...limitRules])
