import fc from 'fast-check'
import { invalidValues } from '../invalid-values.js'
import type { JsonSchema } from '../schema-arbitrary.js'
import { invalidParameterTexts } from './parameter-texts.js'
import type { Parameter, RestOperation } from './rest-operations.js'

/** What a generated request broke; absent on a valid one. */
export interface Flaw {
  where: 'path' | 'query' | 'header' | 'body'
  what: string
  /** The field `details` must name when the answer is a VALIDATION_ERROR. */
  field?: string
  /** False for oddities a server may read leniently: only the general rules apply. */
  refused: boolean
  /**
   * A body that cannot be read as JSON at all (cut short, not JSON, too large, another
   * media type): refused while it is parsed, before anything that reads it (a signature).
   */
  unparsable?: boolean
}

/** The request's parts as text, before any flaw is put in. */
export interface Draft {
  path: Record<string, string>
  query: [string, string][]
  headers: Record<string, string>
  body?: string
}

type Flawed = fc.Arbitrary<[Draft, Flaw]>

/** The draft with one flaw put in, in a parameter or the body, and what the flaw is. */
export function flawedDraft(operation: RestOperation, draft: Draft): Flawed {
  const options: Flawed[] = operation.parameters.flatMap((parameter) =>
    parameterFlaws(parameter, draft),
  )
  if (operation.body) options.push(...bodyFlaws(operation.body, draft))
  // Nothing to break (GET /metrics): what it does not read, a query parameter it does not
  // take, which a server may ignore; only the general rules apply.
  if (options.length === 0) {
    const unknown: Draft = { ...draft, query: [...draft.query, ['unknown', '1']] }
    const flaw: Flaw = { where: 'query', what: 'a parameter it does not take', refused: false }
    options.push(fc.constant<[Draft, Flaw]>([unknown, flaw]))
  }
  return fc.oneof(...options)
}

function parameterFlaws(parameter: Parameter, draft: Draft): Flawed[] {
  const { name } = parameter
  if (parameter.in === 'header' && parameter.schema.maxLength === undefined) return []
  const texts = invalidParameterTexts(parameter.schema, parameter.in)
  const flawOf = (what: string, refused: boolean): Flaw => ({
    where: parameter.in,
    what: `${name}: ${what}`,
    // Header names are case-insensitive; the server has them in lower case.
    field: parameter.in === 'header' ? name.toLowerCase() : name,
    refused,
  })
  const replaced: Flawed = texts.map(({ encoded, flaw, refused }) => {
    const next = structuredClone(draft)
    if (parameter.in === 'path') next.path[name] = encoded
    if (parameter.in === 'header') next.headers[name] = encoded
    if (parameter.in === 'query') {
      next.query = [...next.query.filter(([each]) => each !== name), [name, encoded]]
    }
    return [next, flawOf(flaw, refused)]
  })
  if (parameter.in !== 'query') return [replaced]
  // A scalar given twice is a list, which its schema does not allow.
  const repeated: Flawed = fc.constant([
    { ...draft, query: [...draft.query, [name, '1'], [name, '2']] },
    flawOf('given twice', true),
  ])
  return [replaced, repeated]
}

function bodyFlaws(schema: JsonSchema, draft: Draft): Flawed[] {
  const withBody = (body: string | undefined, contentType: string | undefined) => {
    const headers = { ...draft.headers }
    delete headers['content-type']
    if (contentType) headers['content-type'] = contentType
    return { ...draft, headers, ...(body === undefined ? { body: undefined } : { body }) }
  }
  const json = draft.body ?? '{}'
  const flaw = (what: string, field?: string): Flaw => ({
    where: 'body',
    what,
    refused: true,
    ...(field && { field }),
  })
  const unparsable = (what: string): Flaw => ({ ...flaw(what), unparsable: true })
  return [
    invalidValues(schema).map(({ value, flaw: what, field }): [Draft, Flaw] => [
      withBody(JSON.stringify(value), 'application/json'),
      flaw(what, field),
    ]),
    fc
      .integer({ min: 0, max: Math.max(json.length - 1, 0) })
      .map((cut): [Draft, Flaw] => [
        withBody(json.slice(0, cut), 'application/json'),
        unparsable('JSON cut short'),
      ]),
    fc
      .constantFrom<[string, boolean]>(
        ["{'name': 'single quotes'}", true],
        ['{"a": 1,}', true],
        ['{"a": NaN}', true],
        ['{"a": 0x10}', true],
        // JSON, only not of any schema here: it reads as Infinity.
        [`{"price": 1e400}`, false],
        // Prototype poisoning: the parser refuses it as it refuses text that is not JSON.
        ['{"__proto__": {"admin": true}}', true],
        ['{"constructor": {"prototype": {"admin": true}}}', true],
        [`${'['.repeat(100_000)}${']'.repeat(100_000)}`, false],
        [`{"a":${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}}`, false],
        ['x'.repeat(2 * 1024 * 1024), true],
        [`{"name": "${'x'.repeat(2 * 1024 * 1024)}"}`, true],
      )
      .map(([body, unreadable]): [Draft, Flaw] => {
        const what = 'not JSON, not this JSON, or too large'
        return [withBody(body, 'application/json'), unreadable ? unparsable(what) : flaw(what)]
      }),
    fc.constant<[Draft, Flaw]>([withBody('', 'application/json'), unparsable('empty JSON body')]),
    fc.constant<[Draft, Flaw]>([withBody(undefined, undefined), flaw('no body')]),
    fc
      .constantFrom(
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/xml',
        'application/jsonx',
        'application/octet-stream',
      )
      .map((contentType): [Draft, Flaw] => [
        withBody(json, contentType),
        unparsable(`sent as ${contentType}`),
      ]),
  ]
}
