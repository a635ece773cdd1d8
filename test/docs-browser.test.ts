import { readFileSync } from 'node:fs'
import { buildSchema, parse, validate } from 'graphql'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_QUERY } from '../src/graphql/graphiql.js'
import { schemaPath } from '../src/graphql/plugin.js'
import { backends } from './helpers/backends.js'
import { launchBrowser } from './helpers/browser.js'
import { graphql } from './helpers/graphql.js'
import { startServer, type TestServer } from './helpers/server.js'

it("keeps GraphiQL's example valid against schema.graphql", () => {
  const schema = buildSchema(readFileSync(schemaPath, 'utf8'))
  expect(validate(schema, parse(DEFAULT_QUERY))).toEqual([])
})

describe.each(backends.slice(0, 1))('the docs in a real browser ($name)', (backend) => {
  let server: TestServer
  let browser: Browser
  let page: Page
  const failedRequests: string[] = []

  beforeAll(async () => {
    server = await startServer(backend, { NODE_ENV: 'development' })
    browser = await launchBrowser()
    page = await browser.newPage()
    page.on('requestfailed', (request) => failedRequests.push(request.url()))
  })
  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  it('lists the product operations in Swagger UI', async () => {
    await page.goto(`${server.baseUrl}/docs`)
    await page.waitForSelector('.opblock-summary-path', { timeout: 20_000 })
    const operations = await page.$$eval('.opblock-summary', (blocks) =>
      blocks.map((block) => block.textContent?.replace(/\s+/g, ' ').trim()),
    )
    for (const expected of [
      'GET/productsList products',
      'POST/productsCreate a product',
      'GET/products/{id}Read a product',
      'PATCH/products/{id}Update a product partly',
      'DELETE/products/{id}Delete a product',
    ]) {
      expect(
        operations.some((text) => text?.replace(/\s/g, '').includes(expected.replace(/\s/g, ''))),
      ).toBe(true)
    }
    expect(failedRequests).toEqual([])
  })

  it('renders the API description as prose: no line of it turned into a list', async () => {
    await page.goto(`${server.baseUrl}/docs`)
    const description = page.locator('.information-container .info .description')
    await description.waitFor({ timeout: 20_000 })
    expect(await description.locator('ol, ul, h1, h2, h3, blockquote').count()).toBe(0)
    const text = (await description.textContent())?.replace(/\s+/g, ' ')
    expect(text).toContain('answers 304 (Not Modified)')
  })

  it('opens GraphiQL, on a first visit, on the chat example', async () => {
    // A page of its own is a browser context of its own: nothing stored from other tests.
    const fresh = await browser.newPage()
    await fresh.goto(`${server.baseUrl}/graphiql`)
    const editor = fresh.locator('.graphiql-query-editor .CodeMirror')
    await editor.waitFor({ timeout: 20_000 })
    const text = await editor.evaluate((element) =>
      (element as unknown as { CodeMirror: { getValue(): string } }).CodeMirror.getValue(),
    )
    expect(text).toContain('messageAdded(chatId: "demo")')
    expect(text).toBe(DEFAULT_QUERY)
    await fresh.close()
  })

  /** GraphiQL with a query already in its editor (GraphiQL keeps it in localStorage). */
  async function openGraphiql(target: Page, query: string) {
    await target.addInitScript(`localStorage.setItem('graphiql:query', ${JSON.stringify(query)})`)
    await target.goto(`${server.baseUrl}/graphiql`)
  }

  it('runs a query in GraphiQL and shows the result', async () => {
    await graphql(
      server.baseUrl,
      'mutation { sendMessage(text: "seen in GraphiQL", author: "docs") { id } }',
    )
    await openGraphiql(page, '{ messages(limit: 1) { text author } }')
    await page.click('.graphiql-execute-button', { timeout: 20_000 })
    await expect
      .poll(() => page.textContent('.graphiql-response'), { timeout: 20_000 })
      .toContain('seen in GraphiQL')
    expect(failedRequests).toEqual([])
  })

  it('shows, in a GraphiQL subscription, a message sent from another tab', async () => {
    const watcher = await browser.newPage()
    const sender = await browser.newPage()
    await openGraphiql(watcher, 'subscription { messageAdded(chatId: "tabs") { text author } }')
    await watcher.click('.graphiql-execute-button', { timeout: 20_000 })
    await expect.poll(() => server.events.activeSubscriptions(), { timeout: 20_000 }).toBe(1)
    await openGraphiql(
      sender,
      'mutation { sendMessage(text: "hello from the other tab", author: "tab 2", chatId: "tabs") { id } }',
    )
    await sender.click('.graphiql-execute-button', { timeout: 20_000 })
    await expect
      .poll(() => watcher.textContent('.graphiql-response'), { timeout: 20_000 })
      .toContain('hello from the other tab')
  })
})
