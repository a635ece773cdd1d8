import { eq } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { users } from '../src/db/schema.js'
import { backends } from './helpers/backends.js'
import { METHODS, specification } from './helpers/contract.js'
import { ADMIN, newUser, startServer, type TestServer } from './helpers/server.js'

// Walks openapi.yaml itself, so an operation added later is covered without a new test.
const operations = Object.entries(specification.paths).flatMap(([template, path]) =>
  METHODS.flatMap((method) => {
    const operation = path[method]
    if (!operation) return []
    const roles = operation.security?.flatMap((requirement) => requirement.bearerAuth ?? []) ?? []
    // metricsToken takes an admin's bearer token (or METRICS_TOKEN, unset here).
    const scraped = (operation.security ?? []).some((requirement) => 'metricsToken' in requirement)
    return [
      {
        name: `${method.toUpperCase()} ${template}`,
        method: method.toUpperCase(),
        path: template.replace(/\{[^}]+\}/g, '1'),
        secured:
          scraped || (operation.security ?? []).some((requirement) => 'bearerAuth' in requirement),
        signed: (operation.security ?? []).some((requirement) => 'webhookSignature' in requirement),
        adminOnly: scraped || (roles.length > 0 && !roles.includes('user')),
        hasBody: method !== 'get' && method !== 'delete',
        conditional: (operation.parameters ?? []).some((each) => each.name === 'If-Match'),
      },
    ]
  }),
)
const secured = operations.filter((each) => each.secured)
const adminOnly = operations.filter((each) => each.adminOnly)
// Signed webhooks (webhookSignature) have a suite of their own: payment-webhooks.test.ts.
const open = operations.filter((each) => !each.secured && !each.signed)
// Writes that take If-Match: its 412 would tell a caller without the right that the
// resource exists and has changed.
const conditional = operations.filter((each) => each.conditional)

describe.each(backends)('security on $name', (backend) => {
  let server: TestServer
  let userToken: string
  const send = (
    operation: (typeof operations)[number],
    token?: string,
    headers?: Record<string, string>,
  ) =>
    server.api.request(operation.method, operation.path, {
      ...(operation.hasBody && { json: {} }),
      ...(token && { token }),
      ...(headers && { headers }),
    })
  const STALE = { 'if-match': '"stale"' }

  beforeAll(async () => {
    server = await startServer(backend)
    userToken = (await newUser(server.api)).accessToken
  })
  afterAll(() => server?.close())

  it('finds secured, admin-only and open operations in the spec', () => {
    expect(secured.map((each) => each.name)).toEqual(
      expect.arrayContaining([
        'POST /products',
        'POST /auth/2fa/setup',
        'POST /auth/2fa/enable',
        'POST /auth/2fa/disable',
        'PATCH /users/{id}',
        'DELETE /users/{id}',
      ]),
    )
    expect(adminOnly.map((each) => each.name)).toEqual(
      expect.arrayContaining(['DELETE /products/{id}', 'GET /metrics', 'GET /users']),
    )
    // Every operation on outgoing webhooks is an admin's.
    const webhookEndpoints = operations.filter((each) => each.path.startsWith('/webhook-endpoints'))
    expect(webhookEndpoints.map((each) => each.name).sort()).toEqual([
      'DELETE /webhook-endpoints/{id}',
      'GET /webhook-endpoints',
      'GET /webhook-endpoints/{id}',
      'GET /webhook-endpoints/{id}/deliveries',
      'PATCH /webhook-endpoints/{id}',
      'POST /webhook-endpoints',
      'POST /webhook-endpoints/{id}/deliveries/{deliveryId}/retry',
    ])
    expect(webhookEndpoints.every((each) => each.adminOnly)).toBe(true)
    expect(open.map((each) => each.name)).toEqual(
      expect.arrayContaining(['GET /products', 'GET /users/{id}', 'POST /users']),
    )
    // The credential operations: a change of password and logout-all need the account's
    // token; a reset and a verification are proven by an emailed token instead.
    expect(secured.map((each) => each.name)).toEqual(
      expect.arrayContaining(['POST /auth/password', 'POST /auth/logout-all']),
    )
    expect(conditional.map((each) => each.name)).toEqual([
      'PUT /products/{id}',
      'PATCH /products/{id}',
      'DELETE /products/{id}',
      'PATCH /orders/{id}',
    ])
    expect(open.map((each) => each.name)).toEqual(
      expect.arrayContaining([
        'POST /auth/password-reset',
        'POST /auth/password-reset/confirm',
        'POST /auth/verify-email',
      ]),
    )
  })

  // What a user may do to their own account or posts, and not to another's (the admin's).
  it.each([
    ['PATCH', '/users/{id}', { name: 'Not yours' }],
    ['DELETE', '/users/{id}', undefined],
    ['POST', '/users/{id}/posts', { title: 'Not yours' }],
    ['DELETE', '/users/{id}/posts/1', undefined],
  ])("%s %s answers 403 to a user for another user's account", async (method, path, json) => {
    const [adminRow] = await server.testDatabase.database.db
      .select({ id: users.id })
      .from(users)
      .where(eq(users.email, ADMIN.email))
    const before = await server.testDatabase.database.db.select().from(users)
    const response = await server.api.request(method, path.replace('{id}', String(adminRow?.id)), {
      ...(json && { json }),
      token: userToken,
    })
    expect(response.status, response.text).toBe(403)
    expect(response.body.error.code).toBe('FORBIDDEN')
    expect(await server.testDatabase.database.db.select().from(users)).toEqual(before)
  })

  it.each(secured)('$name answers 401 without a token', async (operation) => {
    const response = await send(operation)
    expect(response.status).toBe(401)
    expect(response.body.error.code).toBe('UNAUTHENTICATED')
  })

  it.each(secured.filter((each) => each.method === 'GET'))(
    'HEAD of $name answers 401 without a token, as the GET does',
    async (operation) => {
      const response = await fetch(`${server.baseUrl}${operation.path}`, { method: 'HEAD' })
      expect(response.status).toBe(401)
    },
  )

  it.each(secured)('$name answers 401 with a forged token', async (operation) => {
    const response = await send(operation, 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.forged')
    expect(response.status).toBe(401)
  })

  it.each(adminOnly)('$name answers 403 to a user', async (operation) => {
    const response = await send(operation, userToken)
    expect(response.status).toBe(403)
    expect(response.body.error.code).toBe('FORBIDDEN')
  })

  it.each(conditional)(
    '$name answers 401 without a token, whatever its If-Match',
    async (operation) => {
      expect((await send(operation, undefined, STALE)).status).toBe(401)
    },
  )

  it.each(conditional.filter((each) => each.adminOnly))(
    '$name answers 403 to a user, whatever its If-Match',
    async (operation) => {
      const response = await send(operation, userToken, STALE)
      expect(response.status).toBe(403)
      expect(response.body.error.code).toBe('FORBIDDEN')
    },
  )

  it.each(open)('$name needs no token', async (operation) => {
    expect((await send(operation)).status).not.toBe(401)
  })
})
