import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import { dirname, join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { launchBrowser } from './helpers/browser.js'
import { subscriptionsActive } from './helpers/graphql.js'
import { ADMIN, startServer, type TestServer } from './helpers/server.js'

// The package exports no subpath for its browser build: found beside its package.json.
const graphqlWsRoot = dirname(createRequire(import.meta.url).resolve('graphql-ws/package.json'))
const PAGE = readFileSync(new URL('./fixtures/cross-origin-app/index.html', import.meta.url))
const GRAPHQL_WS = readFileSync(join(graphqlWsRoot, 'umd/graphql-ws.min.js'))

/** Serves the client app's page from an origin of its own: another port than the API's. */
async function serveApp(): Promise<{ origin: string; server: Server }> {
  const server = createServer((request, response) => {
    const [type, body] =
      request.url === '/graphql-ws.js' ? ['text/javascript', GRAPHQL_WS] : ['text/html', PAGE]
    response.writeHead(200, { 'content-type': type }).end(body)
  })
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening))
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

// Page functions, defined by the page's own script (fixtures/cross-origin-app).
declare function restScenario(api: string, credentials: typeof ADMIN): Promise<any>
declare function subscribe(api: string, token: string, chatId: string): void
declare function sendMessage(api: string, token: string, chatId: string): Promise<any>
declare function refusedScenario(api: string): Promise<any>

describe.each(backends)('a web app on another origin, in Chromium ($name)', (backend) => {
  let service: TestServer
  let listedApp: Awaited<ReturnType<typeof serveApp>>
  let unlistedApp: Awaited<ReturnType<typeof serveApp>>
  let browser: Browser
  let page: Page

  beforeAll(async () => {
    listedApp = await serveApp()
    unlistedApp = await serveApp()
    service = await startServer(backend, {
      CORS_ORIGINS: listedApp.origin,
      RATE_LIMIT_MAX: '1000',
    })
    browser = await launchBrowser()
    page = await browser.newPage()
    await page.goto(listedApp.origin)
  })
  afterAll(async () => {
    await browser?.close()
    await service?.close()
    listedApp?.server.close()
    unlistedApp?.server.close()
  })

  it('calls REST with a bearer token and reads ETag, x-request-id and the rate limit', async () => {
    const result = await page.evaluate(([api, admin]) => restScenario(api, admin), [
      service.baseUrl,
      ADMIN,
    ] as const)
    expect(result).toMatchObject({
      createdStatus: 201,
      location: expect.stringMatching(/^\/products\//),
      readStatus: 200,
      name: 'Cross-origin lamp',
      etag: expect.stringMatching(/^"[\w-]+"$/),
      requestId: expect.stringMatching(/^[\w-]{8,}$/),
      rateLimitRemaining: expect.stringMatching(/^\d+$/),
      revalidatedStatus: 304,
    })
  })

  it('queries GraphQL over POST and follows a subscription over graphql-ws', async () => {
    const { token } = await page.evaluate(([api, admin]) => restScenario(api, admin), [
      service.baseUrl,
      ADMIN,
    ] as const)
    const chatId = `browser-${backend.name}`
    const args = [service.baseUrl, token, chatId] as const
    const before = service.events.activeSubscriptions()
    await page.evaluate(([api, bearer, chat]) => subscribe(api, bearer, chat), args)
    await subscriptionsActive(service.events, before + 1)
    const result = await page.evaluate(
      ([api, bearer, chat]) => sendMessage(api, bearer, chat),
      args,
    )
    expect(result).toMatchObject({
      postStatus: 200,
      requestId: expect.stringMatching(/^[\w-]{8,}$/),
      sent: { data: { sendMessage: { id: expect.any(String) } } },
      received: { text: 'from the browser', chatId },
    })
  })

  it('is refused by the browser on a page of an origin not listed', async () => {
    const stranger = await browser.newPage()
    await stranger.goto(unlistedApp.origin)
    const result = await stranger.evaluate((api) => refusedScenario(api), service.baseUrl)
    expect(result).toEqual({
      get: 'refused: TypeError',
      post: 'refused: TypeError',
      socket: 'refused',
    })
    await stranger.close()
  })
})
