import fc from 'fast-check'
import { type GraphQLArgument, getNullableType, isListType } from 'graphql'
import { authorizationArbitrary, CALLERS, type Caller, type Tokens } from './callers.js'
import { ignoredWhenSignedIn } from './documented-rules.js'
import {
  documentFlaws,
  documentOf,
  type GraphqlBody,
  partsOf,
  passingOf,
  render,
} from './graphql-documents.js'
import {
  type NestedArguments,
  nestedFieldsOf,
  nestedFlaws,
  nestedValues,
} from './graphql-nested.js'
import type { RootField } from './graphql-schema.js'
import { type ArgumentMutant, argumentValues, invalidArgumentValues } from './graphql-values.js'

/** One generated GraphQL request over HTTP POST: what the oracle judges, what fast-check prints. */
export interface GraphqlRequest {
  field: string
  caller: Caller
  authorization?: string
  body: GraphqlBody
  contentType: string
  /** The arguments' values, however they travel (variables or literals). */
  args: Record<string, unknown>
  /** The arguments of fields below the root (`User.posts`), and which of those are selected. */
  nested?: NestedArguments
  flaw?: string
  /** False where the flaw is in what the service ignores (author, from a signed-in caller). */
  refused?: boolean
  /** The argument given a size out of the range schema.graphql declares, and how it travels. */
  outOfRange?: { argument: string; literal: boolean }
}

export interface GraphqlGeneration {
  tokens: Tokens
  hints: GraphqlHints
}

export interface GraphqlHints {
  /**
   * Values that replace an argument's, by `field.argument` (a message's id for `before`),
   * or one of a field below it, by `field.Type.field.argument`.
   */
  values?: Record<string, fc.Arbitrary<unknown>>
  /** More values that must be refused, by `field.argument`. */
  invalid?: Record<string, fc.Arbitrary<unknown>>
}

const hintsFor = (field: RootField, hints: Record<string, fc.Arbitrary<unknown>> = {}) =>
  Object.fromEntries(
    Object.entries(hints)
      .filter(([key]) => key.startsWith(`${field.field.name}.`))
      .map(([key, value]) => [key.slice(field.field.name.length + 1), value]),
  )

/** Requests whose arguments fit the schema's types and documented ranges, from any caller. */
export function validGraphqlRequests(
  field: RootField,
  { tokens, hints }: GraphqlGeneration,
): fc.Arbitrary<GraphqlRequest> {
  return fc
    .record({
      caller: fc.constantFrom(...CALLERS),
      args: argumentValues(field.field.args, hintsFor(field, hints.values)),
      nested: nestedValues(field, hintsFor(field, hints.values)),
      passing: passingOf(field),
      alias: fc.option(fc.constantFrom('first', 'renamed'), { nil: undefined }),
    })
    .chain(({ caller, args, nested, passing, alias }) =>
      authorizationArbitrary(caller, tokens).map((authorization) => ({
        field: field.field.name,
        caller,
        ...(authorization && { authorization }),
        body: { ...documentOf(field, args, passing, alias, nested), operationName: 'Fuzz' },
        contentType: 'application/json',
        args,
        nested,
      })),
    )
}

/**
 * Requests with one flaw each: an argument of the wrong type or against its documented
 * rules, a document that does not parse or validate (unknown fields and arguments,
 * variables of the wrong type, undeclared or unused, too many aliases), or a body
 * that is not a GraphQL request at all.
 */
export function flawedGraphqlRequests(
  field: RootField,
  { tokens, hints }: GraphqlGeneration,
): fc.Arbitrary<GraphqlRequest> {
  const base = fc.record({
    caller: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom<Caller>('anonymous', 'user') },
      { weight: 1, arbitrary: fc.constantFrom(...CALLERS) },
    ),
    args: argumentValues(field.field.args, hintsFor(field, hints.values)),
    nested: nestedValues(field, hintsFor(field, hints.values)),
    passing: passingOf(field),
  })
  return base.chain(({ caller, args, nested, passing }) => {
    const parts = partsOf(field, args, passing, undefined, nested)
    const valid = { query: render(parts), variables: parts.variables }
    const request = (
      body: GraphqlRequest['body'],
      flaw: string,
      contentType = 'application/json',
    ) =>
      ({ field: field.field.name, caller, body, contentType, args, nested, flaw }) as GraphqlRequest
    const options: fc.Arbitrary<GraphqlRequest>[] = [
      documentFlaws(parts).map(([body, flaw]) => request(body, flaw)),
      transportFlaws(valid).map(([body, flaw, type]) => request(body, flaw, type)),
    ]
    if (field.field.args.length > 0) {
      const signedIn = caller === 'user' || caller === 'admin'
      options.push(
        argumentFlaws(field, args, hints).map(([flawedArgs, mutant, argument]) => ({
          ...request({ ...documentOf(field, flawedArgs, passing, undefined, nested) }, mutant.flaw),
          args: flawedArgs,
          refused: !(
            signedIn &&
            mutant.breaks === 'rule' &&
            ignoredWhenSignedIn(argument.description)
          ),
          ...(mutant.breaks === 'range' && {
            outOfRange: { argument: argument.name, literal: passing[argument.name] === 'literal' },
          }),
        })),
      )
    }
    if (nestedFieldsOf(field.field.type).size > 0) {
      options.push(
        nestedFlaws(field, nested).map(([flawedNested, mutant, argument]) => ({
          ...request(documentOf(field, args, passing, undefined, flawedNested), mutant.flaw),
          nested: flawedNested,
          // Read as each parent resolves: a list of users may hold none (ids no user has),
          // and then nothing reads it. A value of the wrong type or out of its declared
          // range is refused with the document anyway.
          refused: mutant.breaks !== 'rule' || !isListType(getNullableType(field.field.type)),
          // Nested arguments are written into the document.
          ...(mutant.breaks === 'range' && { outOfRange: { argument, literal: true } }),
        })),
      )
    }
    return fc
      .tuple(fc.oneof(...options), authorizationArbitrary(caller, tokens))
      .map(([flawed, authorization]) => ({ ...flawed, ...(authorization && { authorization }) }))
  })
}

function argumentFlaws(
  field: RootField,
  args: Record<string, unknown>,
  hints: GraphqlHints,
): fc.Arbitrary<[Record<string, unknown>, ArgumentMutant, GraphQLArgument]> {
  const extra = hintsFor(field, hints.invalid)
  return fc.constantFrom(...field.field.args).chain((argument) => {
    const values = invalidArgumentValues(argument)
    const hinted = extra[argument.name]
    const mutants = hinted
      ? fc.oneof(
          values,
          hinted.map(
            (value): ArgumentMutant => ({
              value,
              flaw: `${argument.name}: not an id`,
              breaks: 'rule',
            }),
          ),
        )
      : values
    // Written into the document, a value of the wrong type is a document that does not
    // validate; as a variable, one that cannot be coerced. Both are refused.
    return mutants.map((mutant): [Record<string, unknown>, ArgumentMutant, GraphQLArgument] => [
      { ...args, [argument.name]: mutant.value },
      mutant,
      argument,
    ])
  })
}

/** Bodies that are not a GraphQL request: another media type, cut short, a batch, too large. */
function transportFlaws(valid: {
  query: string
  variables: Record<string, unknown>
}): fc.Arbitrary<[GraphqlBody, string, string]> {
  const json = JSON.stringify(valid)
  return fc.oneof(
    fc.constant<[GraphqlBody, string, string]>([{ raw: json }, 'sent as text/plain', 'text/plain']),
    fc
      .integer({ min: 0, max: json.length - 1 })
      .map((cut): [GraphqlBody, string, string] => [
        { raw: json.slice(0, cut) },
        'JSON cut short',
        'application/json',
      ]),
    fc.constant<[GraphqlBody, string, string]>([
      { raw: `[${json}, ${json}]` },
      'a batch',
      'application/json',
    ]),
    fc.constant<[GraphqlBody, string, string]>([
      { raw: `{"query": ${JSON.stringify(`${valid.query}${' '.repeat(2 * 1024 * 1024)}`)}}` },
      'larger than a body may be',
      'application/json',
    ]),
  )
}
