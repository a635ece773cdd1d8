import { expect } from 'vitest'
import type { ApiResponse } from '../api.js'
import type { JsonSchema } from '../schema-arbitrary.js'
import { refusalOf } from './callers.js'
import { storedState } from './database-state.js'
import { fieldsBreakingRules } from './documented-rules.js'
import { validExpectations } from './rest-expectations.js'
import type { RestOperation } from './rest-operations.js'
import type { Flaw, FuzzRequest } from './rest-requests.js'
import { resolvePlaceholders, type World } from './world.js'

/** Statuses that refuse a flawed request for what it is, by where the flaw is. */
const REFUSALS: Record<Flaw['where'], number[]> = {
  // 404: a segment longer than the router takes matches no route.
  path: [400, 404],
  query: [400],
  header: [400],
  body: [400, 413, 415],
}

/**
 * Sends the request and holds the answer to every rule: never a 5xx, always what
 * openapi.yaml documents (the api client checks that), a refusal that changes nothing,
 * and for valid input the answer its operation's rules give.
 */
export async function exchange(world: World, operation: RestOperation, request: FuzzRequest) {
  // Issuing the tokens a body names stores some: before the state is taken.
  const body = await bodyToSend(world, request)
  const before = await storedState(world.db)
  const response = await world.server.api.request(request.method, request.url, {
    headers: request.headers,
    ...(body !== undefined && { raw: body }),
  })
  expect(response.status, `a server error: ${response.text}`).toBeLessThan(500)
  expect(response.headers.get('x-request-id'), 'every response names its request').toBeTruthy()
  const refused = request.flaw ? judgeFlawed(operation, request, response) : undefined
  const validRefused = request.flaw
    ? undefined
    : await judgeValid(world, operation, request, response)
  if (refused || validRefused || response.status >= 400) {
    expect(await storedState(world.db), 'a refused request changed what is stored').toBe(before)
  }
}

async function bodyToSend(world: World, request: FuzzRequest): Promise<string | undefined> {
  const { body, inputs, caller } = request
  if (request.flaw || inputs.body === undefined) return body
  return JSON.stringify(await resolvePlaceholders(world, caller, inputs.body))
}

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
  if (!flaw.refused) return false
  expect(REFUSALS[flaw.where], `a flawed request accepted: ${response.text}`).toContain(
    response.status,
  )
  if (response.body?.error?.code === 'VALIDATION_ERROR' && flaw.field) {
    expect(
      Object.keys(response.body.error.details),
      'details must name the flawed field',
    ).toContain(flaw.field)
  }
  return true
}

/** True when the valid request had to be refused (a documented rule, or the caller). */
async function judgeValid(
  world: World,
  operation: RestOperation,
  request: FuzzRequest,
  response: ApiResponse,
) {
  const refusal = refusalOf(operation.roles, request.caller)
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
  if (response.status === 400) {
    throw new Error(`valid input refused, and no documented rule says why: ${response.text}`)
  }
  await validExpectations[operation.operationId]({
    request,
    response,
    inputs: request.inputs,
    caller: request.caller,
    world,
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
