import { type DocumentNode, type GraphQLSchema, TypeInfo, visit, visitWithTypeInfo } from 'graphql'

/**
 * Counts each use of a field marked @deprecated (once per operation that selects it), so
 * its removal can wait until nobody asks for it. The fields a document selects are found
 * once: Mercurius over HTTP, and the WebSocket admission, hand the same parsed document
 * to every execution of the same query.
 */
export function createDeprecationCounter(count: (field: string) => void) {
  const deprecatedFields = new WeakMap<DocumentNode, string[]>()
  return function countDeprecatedFields(schema: GraphQLSchema, document: DocumentNode) {
    let fields = deprecatedFields.get(document)
    if (!fields) {
      fields = deprecatedFieldsOf(schema, document)
      deprecatedFields.set(document, fields)
    }
    for (const field of fields) count(field)
  }
}

/** `Type.field` of every deprecated field the document selects. */
function deprecatedFieldsOf(schema: GraphQLSchema, document: DocumentNode): string[] {
  const typeInfo = new TypeInfo(schema)
  const fields = new Set<string>()
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field() {
        const definition = typeInfo.getFieldDef()
        const parent = typeInfo.getParentType()
        if (definition?.deprecationReason != null && parent) {
          fields.add(`${parent.name}.${definition.name}`)
        }
      },
    }),
  )
  return [...fields]
}
