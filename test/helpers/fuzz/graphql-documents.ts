import fc from 'fast-check'
import { type NestedArguments, selectionOf } from './graphql-nested.js'
import type { RootField } from './graphql-schema.js'
import { literalOf } from './graphql-values.js'

/** What a GraphQL request's JSON body holds, or raw text for the transport's flaws. */
export type GraphqlBody =
  | { query?: unknown; variables?: unknown; operationName?: unknown }
  | { raw: string }

/** How each argument travels: as a variable, or written into the document. */
export type Passing = 'variable' | 'literal'

/** A document as parts, so a flaw can change one and leave the rest well formed. */
export interface DocumentParts {
  kind: string
  declarations: string[]
  call: string[]
  field: string
  selection: string
  variables: Record<string, unknown>
}

export function partsOf(
  { kind, field }: RootField,
  args: Record<string, unknown>,
  passing: Record<string, Passing>,
  alias?: string,
  nested: NestedArguments = {},
): DocumentParts {
  const given = field.args.filter((argument) => argument.name in args)
  const variables = given.filter((argument) => passing[argument.name] !== 'literal')
  return {
    kind,
    declarations: variables.map((argument) => `$${argument.name}: ${argument.type}`),
    call: given.map((argument) =>
      passing[argument.name] === 'literal'
        ? `${argument.name}: ${literalOf(argument, args[argument.name])}`
        : `${argument.name}: $${argument.name}`,
    ),
    field: alias ? `${alias}: ${field.name}` : field.name,
    selection: selectionOf(field.type, nested),
    variables: Object.fromEntries(
      variables.map((argument) => [argument.name, args[argument.name]]),
    ),
  }
}

export function render(parts: DocumentParts): string {
  const header = parts.declarations.length > 0 ? `(${parts.declarations.join(', ')})` : ''
  const call = parts.call.length > 0 ? `(${parts.call.join(', ')})` : ''
  return `${parts.kind} Fuzz${header} { ${parts.field}${call} ${parts.selection} }`
}

export const documentOf = (
  field: RootField,
  args: Record<string, unknown>,
  passing: Record<string, Passing>,
  alias?: string,
  nested: NestedArguments = {},
) => {
  const parts = partsOf(field, args, passing, alias, nested)
  return { query: render(parts), variables: parts.variables }
}

export function passingOf(field: RootField): fc.Arbitrary<Record<string, Passing>> {
  return fc.record(
    Object.fromEntries(
      field.field.args.map((argument) => [
        argument.name,
        fc.constantFrom<Passing>('variable', 'variable', 'literal'),
      ]),
    ),
  )
}

/**
 * Documents with one flaw each, the rest well formed: cut short, an unknown field or
 * argument, a variable unused, undeclared or declared with another type, more aliases
 * than allowed, two operations of one name, an operation that is not there, a query or
 * variables of the wrong JSON type, a NUL in the source.
 */
export function documentFlaws(parts: DocumentParts): fc.Arbitrary<[GraphqlBody, string]> {
  const { variables } = parts
  const query = render(parts)
  const flawed = (change: Partial<DocumentParts>, flaw: string): [GraphqlBody, string] => [
    { query: render({ ...parts, ...change }), variables },
    flaw,
  ]
  const aliased = Array.from(
    { length: 21 },
    (_, i) =>
      `a${i}: ${parts.field}${parts.call.length > 0 ? `(${parts.call.join(', ')})` : ''} ${parts.selection}`,
  )
  const options: fc.Arbitrary<[GraphqlBody, string]>[] = [
    fc
      .integer({ min: 1, max: query.length - 1 })
      .map((cut): [GraphqlBody, string] => [
        { query: query.slice(0, cut), variables },
        'document cut short',
      ]),
    fc.constant(
      flawed({ selection: parts.selection.replace('{ ', '{ unknownField ') }, 'unknown field'),
    ),
    fc.constant(flawed({ call: [...parts.call, 'unknownArgument: 1'] }, 'unknown argument')),
    fc.constant(
      flawed({ declarations: [...parts.declarations, '$unused: Int'] }, 'unused variable'),
    ),
    fc.constant<[GraphqlBody, string]>([
      { query: `${parts.kind} { ${aliased.join(' ')} }`, variables: {} },
      'too many aliases',
    ]),
    fc.constant<[GraphqlBody, string]>([
      { query: `${query} ${query}`, variables, operationName: 'Fuzz' },
      'two operations of one name',
    ]),
    fc.constant<[GraphqlBody, string]>([
      { query, variables, operationName: 'Other' },
      'no such operation',
    ]),
    fc
      .constantFrom<unknown>(12, null, '', ['query'], { query })
      .map((bad): [GraphqlBody, string] => [{ query: bad, variables }, 'query not a document']),
    fc
      .constantFrom<unknown>('x', 12, [variables])
      .map((bad): [GraphqlBody, string] => [{ query, variables: bad }, 'variables not an object']),
    fc.constant<[GraphqlBody, string]>([
      { query: query.replace(' {', ' { \u0000'), variables },
      'NUL in the document',
    ]),
  ]
  if (parts.call.length > 0) {
    const call = parts.call.map((each) => each.replace(/: .*/, ': $undeclared'))
    options.push(fc.constant(flawed({ declarations: [], call }, 'undeclared variable')))
  }
  if (parts.declarations.length > 0) {
    // Another type than its own: Boolean, or Int for a Boolean (notifications' unreadOnly).
    const other = (declaration: string) =>
      /: Boolean!?$/.test(declaration) ? ': Int' : ': Boolean'
    const retyped = parts.declarations.map((each, i) =>
      i === 0 ? each.replace(/: .*/, other(each)) : each,
    )
    options.push(
      fc.constant(flawed({ declarations: retyped }, 'variable declared with another type')),
    )
  }
  return fc.oneof(...options)
}
