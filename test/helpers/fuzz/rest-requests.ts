import fc from 'fast-check'
import { type JsonSchema, validValues } from '../schema-arbitrary.js'
import {
  authorizationArbitrary,
  CALLERS,
  type Caller,
  entitledCallers,
  type Tokens,
} from './callers.js'
import { type Draft, type Flaw, flawedDraft } from './rest-flaws.js'
import type { Parameter, RestOperation } from './rest-operations.js'

export type { Flaw } from './rest-flaws.js'

/** Values that fit their schemas, by where they travel. */
export interface Inputs {
  path: Record<string, unknown>
  query: Record<string, unknown>
  header: Record<string, unknown>
  body?: unknown
}

/** One generated HTTP request: what the oracle judges, and what fast-check prints. */
export interface FuzzRequest {
  operationId: string
  caller: Caller
  method: string
  /** Percent-encoded path and query string. */
  url: string
  headers: Record<string, string>
  /** The body as sent, when there is one. */
  body?: string
  inputs: Inputs
  flaw?: Flaw
}

/**
 * A value only a running server can give (a refresh token issued a moment ago), put in
 * a generated body and swapped for the real thing just before the request is sent.
 */
export interface Placeholder {
  placeholder: 'ownRefreshToken' | 'rotatedRefreshToken'
}
export const isPlaceholder = (value: unknown): value is Placeholder =>
  typeof value === 'object' && value !== null && 'placeholder' in value

/** Values the schemas alone would almost never produce: ids that exist, accounts' emails. */
export interface Hints {
  /** More values for a parameter, by name (`id`). */
  parameters?: Record<string, fc.Arbitrary<unknown>>
  /** More bodies for an operation, beside those of its schema. */
  bodies?: Partial<Record<string, fc.Arbitrary<unknown>>>
  /** More values for a path's parameters together, by template (a user and their post). */
  paths?: Record<string, fc.Arbitrary<Record<string, unknown>>>
  /**
   * Whether a request may be sent: false for one that would take away an account the
   * world's tokens belong to (a deletion, a change of role), after which no other
   * request would be judged as it is meant to be.
   */
  sendable?: (request: FuzzRequest) => boolean
}

export interface Generation {
  tokens: Tokens
  hints: Hints
}

const JSON_TYPES = ['application/json', 'application/json; charset=utf-8', 'Application/JSON']

/** Printable ASCII, the only header text fetch sends as is. */
const headerText = (schema: JsonSchema) =>
  fc.oneof(
    fc.constantFrom('*', '"abc"', 'W/"abc"', '"a", "b"'),
    fc
      .string({ unit: 'grapheme-ascii', maxLength: Math.min(schema.maxLength ?? 64, 64) })
      .map((text) => text.trim()),
  )

/** Header text of its schema: the pattern's own when it has one (Idempotency-Key has). */
const headerValues = (schema: JsonSchema) =>
  schema.pattern
    ? (validValues(schema) as fc.Arbitrary<string>).filter((text) => /^[\x21-\x7E]*$/.test(text))
    : headerText(schema)

function parameterValues(parameter: Parameter, hints: Hints): fc.Arbitrary<unknown> {
  const fromSchema =
    parameter.in === 'header' ? headerValues(parameter.schema) : validValues(parameter.schema)
  const hinted = hints.parameters?.[parameter.name]
  return hinted ? fc.oneof(fromSchema, hinted) : fromSchema
}

function valuesIn(
  operation: RestOperation,
  location: Parameter['in'],
  hints: Hints,
): fc.Arbitrary<Record<string, unknown>> {
  const parameters = operation.parameters.filter((each) => each.in === location)
  const model = Object.fromEntries(
    parameters.map((each) => [each.name, parameterValues(each, hints)]),
  )
  const requiredKeys = parameters.filter((each) => each.required).map((each) => each.name)
  return fc.record(model, { requiredKeys })
}

function validInputs(operation: RestOperation, hints: Hints): fc.Arbitrary<Inputs> {
  const schemaBodies = operation.body ? validValues(operation.body) : fc.constant(undefined)
  const hinted = hints.bodies?.[operation.operationId]
  const paths = valuesIn(operation, 'path', hints)
  const hintedPaths = hints.paths?.[operation.template]
  return fc.record(
    {
      path: hintedPaths ? fc.oneof(paths, hintedPaths) : paths,
      query: valuesIn(operation, 'query', hints),
      header: valuesIn(operation, 'header', hints),
      body: hinted ? fc.oneof(schemaBodies, hinted) : schemaBodies,
    },
    {
      requiredKeys: operation.body
        ? ['path', 'query', 'header', 'body']
        : ['path', 'query', 'header'],
    },
  )
}

const encode = (value: unknown) => encodeURIComponent(String(value))

function draftOf(inputs: Inputs, contentType: string): Draft {
  const draft: Draft = {
    path: Object.fromEntries(Object.entries(inputs.path).map(([name, v]) => [name, encode(v)])),
    query: Object.entries(inputs.query).map(([name, value]) => [name, encode(value)]),
    headers: Object.fromEntries(
      Object.entries(inputs.header).map(([name, value]) => [name, String(value)]),
    ),
  }
  if ('body' in inputs && inputs.body !== undefined) {
    draft.body = JSON.stringify(inputs.body)
    draft.headers['content-type'] = contentType
  }
  return draft
}

function assemble(
  operation: RestOperation,
  caller: Caller,
  authorization: string | undefined,
  inputs: Inputs,
  draft: Draft,
  flaw?: Flaw,
): FuzzRequest {
  const path = operation.template.replace(/\{(\w+)\}/g, (_, name) => draft.path[name] ?? '')
  const query = draft.query.map(([name, value]) => `${name}=${value}`).join('&')
  const headers = { ...draft.headers, ...(authorization && { authorization }) }
  return {
    operationId: operation.operationId,
    caller,
    method: operation.method,
    url: query ? `${path}?${query}` : path,
    headers,
    ...(draft.body !== undefined && { body: draft.body }),
    inputs,
    ...(flaw && { flaw }),
  }
}

/** Requests whose every value fits openapi.yaml, from every kind of caller. */
export function validRequests(
  operation: RestOperation,
  { tokens, hints }: Generation,
): fc.Arbitrary<FuzzRequest> {
  const caller = fc.constantFrom(...CALLERS)
  return fc
    .tuple(caller, validInputs(operation, hints), fc.constantFrom(...JSON_TYPES))
    .chain(([who, inputs, contentType]) =>
      authorizationArbitrary(who, tokens).map((authorization) =>
        assemble(operation, who, authorization, inputs, draftOf(inputs, contentType)),
      ),
    )
    .filter(hints.sendable ?? (() => true))
}

/**
 * Requests with one flaw each: a value that breaks its schema, a number that is not
 * decimal, a body that is not JSON, not an object, too large or too deep, another
 * media type, or none at all. Mostly from callers the operation serves, so the flaw
 * is what gets judged; sometimes from others, who must be refused first.
 */
export function invalidRequests(
  operation: RestOperation,
  { tokens, hints }: Generation,
): fc.Arbitrary<FuzzRequest> {
  const entitled = entitledCallers(operation.roles)
  const caller = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...entitled) },
    { weight: 1, arbitrary: fc.constantFrom(...CALLERS) },
  )
  // Placeholders stand for tokens issued to valid requests only.
  const valuesOnly = { parameters: hints.parameters ?? {}, paths: hints.paths ?? {} }
  return fc
    .tuple(caller, validInputs(operation, valuesOnly))
    .chain(([who, inputs]) =>
      fc
        .tuple(
          authorizationArbitrary(who, tokens),
          flawedDraft(operation, draftOf(inputs, 'application/json')),
        )
        .map(([authorization, [draft, flaw]]) =>
          assemble(operation, who, authorization, inputs, draft, flaw),
        ),
    )
    .filter(hints.sendable ?? (() => true))
}
