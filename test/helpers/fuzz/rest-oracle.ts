import { expect } from 'vitest'
import type { OperationId } from '../../../src/http/operations.js'
import type { ApiResponse } from '../api.js'
import type { JsonSchema } from '../schema-arbitrary.js'
import { refusalOf } from './callers.js'
import { type StoredRows, storedRows, storedState } from './database-state.js'
import { fieldsBreakingRules } from './documented-rules.js'
import { currentTags } from './if-match.js'
import { validExpectations } from './rest-expectations.js'
import type { RestOperation } from './rest-operations.js'
import type { Flaw, FuzzRequest } from './rest-requests.js'
import { renewSessionsEndedBy, resolvePlaceholders, type World } from './world.js'

/** Statuses that refuse a flawed request for what it is, by where the flaw is. */
const REFUSALS: Record<Flaw['where'], number[]> = {
  // 404: a segment longer than the router takes matches no route. 405: a segment of
  // dots goes when the URL is normalised, and what is left may be a path the service
  // knows for other methods (`/orders/./cancel` is `/orders/cancel`).
  path: [400, 404, 405],
  query: [400],
  header: [400],
  body: [400, 413, 415],
}

/**
 * A signed operation's answer to any request whose body parses: the fuzz servers have no
 * WEBHOOK_SECRET (world.ts), and without it the service accepts no webhook (503).
 */
const UNSIGNABLE = 503

/**
 * Sends the request and holds the answer to every rule: never a 5xx (but a webhook's
 * 503, see UNSIGNABLE), always what openapi.yaml documents (the api client checks
 * that), a refusal that changes nothing, a connection still usable after a 413, and for
 * valid input the answer its operation's rules give.
 */
export async function exchange(world: World, operation: RestOperation, request: FuzzRequest) {
  // Issuing the tokens a body names stores some: before the state is taken.
  const body = await bodyToSend(world, request)
  const headers = await currentTags(world, request)
  const before = await storedState(world.db)
  // What the rules of a valid request are judged against: the rows before it.
  const rows = request.flaw ? undefined : await storedRows(world.db)
  const response = await world.server.api.request(request.method, request.url, {
    headers,
    ...(body !== undefined && { raw: body }),
  })
  // The one 5xx allowed: a webhook refused by a server without its secret, judged below.
  if (!(operation.signed && response.status === UNSIGNABLE)) {
    expect(response.status, `a server error: ${response.text}`).toBeLessThan(500)
  }
  expect(response.headers.get('x-request-id'), 'every response names its request').toBeTruthy()
  if (response.status === 413) await expectStillServing(world)
  const refused = request.flaw ? judgeFlawed(operation, request, response) : undefined
  const validRefused = rows && (await judgeValid(world, rows, operation, request, response))
  if (refused || validRefused || response.status >= 400) {
    expect(await storedState(world.db), 'a refused request changed what is stored').toBe(before)
  }
  await renewSessionsEndedBy(world, request, response)
}

/** How long the service may take to answer a probe. */
const PROBE_MS = 5_000

/**
 * A body refused as too large is not read to its end: the connection it came on must be
 * closed, or still carry the next request. Clients reuse connections, and two requests
 * right after a 413 reach the one it came on (a probe that hangs is aborted, and with it
 * the connection, so the next request does not hang in its turn).
 */
async function expectStillServing(world: World) {
  for (let probe = 0; probe < 2; probe += 1) {
    const answer = await fetch(`${world.server.baseUrl}/health`, {
      signal: AbortSignal.timeout(PROBE_MS),
    }).then(
      async (response) => `${response.status} ${await response.text()}`,
      (error: Error) => `no answer: ${String(error.cause ?? error)}`,
    )
    expect(answer, 'after a 413, the next request on its connection').toMatch(/^200 /)
  }
}

async function bodyToSend(world: World, request: FuzzRequest): Promise<string | undefined> {
  const { body, inputs, caller } = request
  if (request.flaw || inputs.body === undefined) return body
  return JSON.stringify(await resolvePlaceholders(world, caller, inputs.body))
}

/** `items.0.productId` as a flaw names it: put in an array's first item, without its index. */
const withoutIndexes = (field: string) => field.replace(/\.\d+(?=\.|$)/g, '')

/** True when the request had to be refused (and so must have changed nothing). */
function judgeFlawed(operation: RestOperation, request: FuzzRequest, response: ApiResponse) {
  const flaw = request.flaw as Flaw
  const refusal = refusalOf(operation.roles, request.caller)
  // Routing comes before authentication: a bad path is refused whoever asks.
  if (flaw.where === 'path' && flaw.refused) {
    expect([...REFUSALS.path, ...(refusal ? [refusal] : [])]).toContain(response.status)
    return true
  }
  if (refusal) {
    expect(response.status, 'the caller must be refused first').toBe(refusal)
    return true
  }
  // A signature is checked over the body's bytes once they parse, before validation.
  if (operation.signed && !flaw.unparsable) {
    expect(response.status, 'a webhook accepted without a secret').toBe(UNSIGNABLE)
    return true
  }
  if (!flaw.refused) return false
  expect(REFUSALS[flaw.where], `a flawed request accepted: ${response.text}`).toContain(
    response.status,
  )
  if (response.body?.error?.code === 'VALIDATION_ERROR' && flaw.field) {
    expect(
      Object.keys(response.body.error.details).map(withoutIndexes),
      'details must name the flawed field',
    ).toContain(flaw.field)
  }
  return true
}

/**
 * Operations whose 400 for valid input is documented and comes from what is stored, not
 * from the input's text: an emailed token no account holds (or one used or expired) is
 * `BAD_REQUEST`. Their expectations judge it.
 */
const REFUSED_BY_STATE = new Set<OperationId>(['confirmPasswordReset', 'verifyEmail'])

/** True when the valid request had to be refused (a documented rule, or the caller). */
async function judgeValid(
  world: World,
  rows: StoredRows,
  operation: RestOperation,
  request: FuzzRequest,
  response: ApiResponse,
) {
  const refusal =
    refusalOf(operation.roles, request.caller) ?? (operation.signed ? UNSIGNABLE : undefined)
  if (refusal) {
    expect(response.status, 'the caller must be refused').toBe(refusal)
    return true
  }
  const breaking = documentedRuleBreaks(operation, request)
  if (breaking.length > 0) {
    // Valid as its schema has it, yet against a rule the spec states: refused, for it.
    expect(response.status, `a documented rule broken in ${breaking}`).toBe(400)
    const named = Object.keys(response.body.error.details ?? {})
    expect(named.length).toBeGreaterThan(0)
    for (const field of named) expect(breaking).toContain(field)
    return true
  }
  if (response.status === 400 && !REFUSED_BY_STATE.has(operation.operationId)) {
    throw new Error(`valid input refused, and no documented rule says why: ${response.text}`)
  }
  await validExpectations[operation.operationId]({
    request,
    response,
    inputs: request.inputs,
    caller: request.caller,
    world,
    before: rows,
  })
  return false
}

/** The fields whose values fit their schemas but break a rule the spec's text states. */
function documentedRuleBreaks(operation: RestOperation, request: FuzzRequest): string[] {
  const queryParameters = Object.fromEntries(
    operation.parameters
      .filter((each) => each.in === 'query')
      .map((each) => [each.name, each.schema]),
  )
  const bodyProperties: Record<string, JsonSchema> = operation.body?.properties ?? {}
  const body = request.inputs.body
  return [
    ...fieldsBreakingRules(queryParameters, request.inputs.query),
    ...(typeof body === 'object' && body !== null
      ? fieldsBreakingRules(bodyProperties, body as Record<string, unknown>)
      : []),
  ]
}
