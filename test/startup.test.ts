import Fastify from 'fastify'
import { describe, expect, it } from 'vitest'
import { openapiRoutesPlugin } from '../src/http/openapi-routes.js'
import type { ServiceHandlers } from '../src/http/operations.js'
import { createSecurityHandlers } from '../src/http/security.js'
import { createVersionRouting } from '../src/http/version-routing.js'
import { createAccessTokens } from '../src/platform/infrastructure/access-tokens.js'
import { createLiveAccounts } from '../src/platform/infrastructure/live-accounts.js'
import { backends } from './helpers/backends.js'
import { specification } from './helpers/contract.js'
import { startServer } from './helpers/server.js'

const accessTokens = createAccessTokens({ secret: 's'.repeat(32), ttlSeconds: 60 })
const liveAccounts = createLiveAccounts(async () => 0)
const operationIds = Object.values(specification.paths).flatMap((path) =>
  Object.values(path).map((operation) => operation.operationId),
)
const everyHandler = Object.fromEntries(
  operationIds.map((id) => [id, async () => ({ data: null })]),
) as unknown as ServiceHandlers

async function start(handlers: Partial<ServiceHandlers>, securityHandlers: object) {
  const app = Fastify({ logger: false })
  await app.register(openapiRoutesPlugin, {
    handlers: handlers as ServiceHandlers,
    securityHandlers: securityHandlers as ReturnType<typeof createSecurityHandlers>,
    versions: createVersionRouting({ v1Sunset: undefined, countApiRequest: () => {} }),
    uploadMaxBytes: 1024,
  })
  await app.ready()
  return app
}

describe('start-up', () => {
  it('starts when every operation and security scheme has a handler', async () => {
    const app = await start(everyHandler, createSecurityHandlers(accessTokens, liveAccounts))
    await app.close()
  })

  it('refuses to start when an operation has no handler', async () => {
    const { createProduct, ...incomplete } = everyHandler
    await expect(
      start(incomplete, createSecurityHandlers(accessTokens, liveAccounts)),
    ).rejects.toThrow('openapi.yaml operation "createProduct" has no handler')
  })

  it('refuses to start when a security scheme has no handler', async () => {
    await expect(start(everyHandler, {})).rejects.toThrow('bearerAuth')
  })
})

describe.each(backends)('the API docs on $name', (backend) => {
  it.each([
    ['by default', {}, 200],
    ['with API_DOCS=false', { API_DOCS: 'false' }, 404],
  ])('are served %s, or not', async (_, environment, status) => {
    const server = await startServer(backend, environment)
    try {
      for (const path of ['/docs', '/docs/json']) {
        const response = await fetch(`${server.baseUrl}${path}`)
        expect(response.status, path).toBe(status)
      }
    } finally {
      await server.close()
    }
  })
})
