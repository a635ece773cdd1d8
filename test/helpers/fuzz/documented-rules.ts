import type { JsonSchema } from '../schema-arbitrary.js'

/**
 * Rules the services add to what a type can say, as the specs state them in their
 * descriptions ("not only whitespace", "at least 0.01 once rounded to the cent"). A
 * value the schema accepts may still be refused, but only for one of these: the fuzz
 * suites read them here, so a rule the specs do not state is a rule the suites report.
 */
export type DocumentedRule =
  | 'storable'
  | 'notBlank'
  | 'cent'
  | 'letterOrDigit'
  | 'issuedCursor'
  | 'webhookTarget'

// Half a surrogate pair: no character at all. Without the `u` flag, classes match units.
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * Whether text can be stored at all. Postgres text holds no NUL and no half character;
 * the service refuses both in every string it is sent (src/platform/input-rules.ts says
 * so; the specs do not, see the report of the fuzz branch).
 */
export const isStorableText = (text: string) =>
  !text.includes('\u0000') && !UNPAIRED_SURROGATE.test(text)

const PHRASES: [DocumentedRule, RegExp][] = [
  ['notBlank', /not only whitespace/i],
  ['cent', /at least 0\.01 once rounded to the cent/i],
  ['letterOrDigit', /must contain a letter or a digit/i],
  ['issuedCursor', /`pagination\.nextCursor` as it came/i],
  ['webhookTarget', /an http or https URL without credentials/i],
]

/**
 * A webhook target as the fuzz servers take it (they allow private targets, so nothing is
 * resolved): an http or https URL, by the WHATWG parser, naming a host and no credentials.
 */
function isWebhookTarget(text: string): boolean {
  const url = URL.parse(text)
  return (
    url !== null &&
    /^https?:$/.test(url.protocol) &&
    url.username === '' &&
    url.password === '' &&
    url.hostname !== ''
  )
}

/** A parameter that may not come with another: "not together with `cursor`". */
const EXCLUDES = /not together with `(\w+)`/i

/** The rules a description states, beyond the universal one (storable text). */
export function rulesOf(description: string | undefined | null): DocumentedRule[] {
  if (!description) return []
  return PHRASES.filter(([, phrase]) => phrase.test(description)).map(([rule]) => rule)
}

/** The documented rules `value` breaks under a schema (or a GraphQL argument's description). */
export function brokenRules(
  description: string | undefined | null,
  value: unknown,
): DocumentedRule[] {
  if (typeof value === 'string') {
    const broken: DocumentedRule[] = isStorableText(value) ? [] : ['storable']
    const rules = rulesOf(description)
    if (rules.includes('notBlank') && value.trim() === '') broken.push('notBlank')
    if (rules.includes('letterOrDigit') && !/[\p{L}\p{N}]/u.test(value))
      broken.push('letterOrDigit')
    // The suites hold no cursor the service gave: any they make up is one it refuses.
    if (rules.includes('issuedCursor')) broken.push('issuedCursor')
    if (rules.includes('webhookTarget') && !isWebhookTarget(value)) broken.push('webhookTarget')
    return broken
  }
  if (typeof value === 'number' && rulesOf(description).includes('cent')) {
    return Math.round(value * 100) < 1 ? ['cent'] : []
  }
  return []
}

/**
 * The fields of an object (a body, or a query string's parameters) that break a
 * documented rule: the only ones a 400 may name when every value fits its schema.
 */
export function fieldsBreakingRules(
  schemas: Record<string, JsonSchema>,
  values: Record<string, unknown> | undefined,
): string[] {
  const given = values ?? {}
  const excluded = (description: string | undefined) => {
    const other = description?.match(EXCLUDES)?.[1]
    return other !== undefined && given[other] !== undefined
  }
  return Object.entries(given)
    .filter(
      ([name, value]) =>
        brokenRules(schemas[name]?.description, value).length > 0 ||
        excluded(schemas[name]?.description),
    )
    .map(([name]) => name)
}

/** An argument the service does not read from a signed-in caller ("ignored when …"). */
export const ignoredWhenSignedIn = (description: string | undefined | null) =>
  /ignored when the caller is signed in/i.test(description ?? '')

/**
 * A field only a signed-in caller may use: "Needs a token.", or, for `orderUpdated`,
 * "Only its owner or an admin may follow it", or "Admins only", which no caller
 * without a token is.
 */
export const needsToken = (description: string | undefined | null) =>
  /needs a token|only its owner or an admin|admins only/i.test(description ?? '')

/** A field for admins alone ("Admins only: others fail FORBIDDEN."). */
export const adminsOnly = (description: string | undefined | null) =>
  /admins only/i.test(description ?? '')

/**
 * Lengths and ranges that GraphQL's types cannot state, read from an argument's
 * description: "1 to 4000 characters", "How many messages, 1 to 1000.".
 */
export function documentedRange(
  description: string | undefined | null,
): { min: number; max: number } | undefined {
  const match = description?.match(/(\d+) to (\d+)/)
  return match ? { min: Number(match[1]), max: Number(match[2]) } : undefined
}
