import { type AuditResult, serverAudits } from 'graphql-http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { messages } from '../src/db/schema.js'
import { backends } from './helpers/backends.js'
import { graphql } from './helpers/graphql.js'
import { startServer, type TestServer } from './helpers/server.js'

const SEND_OVER_GET = 'mutation { sendMessage(text:"x", author:"y") { id } }'

/** What a failed audit's response said, for the assertion message. */
async function describeFailure(result: AuditResult) {
  if (result.status === 'ok') return 'ok'
  const { response } = result
  let body = '(body already read by the audit)'
  if (!response.bodyUsed) body = await response.text().catch((error) => `(unreadable: ${error})`)
  const contentType = response.headers.get('content-type')
  return `${result.reason}; the server answered ${response.status} (${contentType}): ${body}`
}

/**
 * The GraphQL over HTTP spec's server audits (graphql-http), one test per audit: every
 * MUST has to pass; SHOULD and MAY audits are run and reported, not required.
 */
describe.each(backends)('GraphQL over HTTP audit on $name', (backend) => {
  let server: TestServer
  // The URL is read when an audit runs, after beforeAll has started the server.
  const audits = serverAudits({ url: () => `${server.baseUrl}/graphql`, fetchFn: fetch })
  const musts = audits.filter((audit) => audit.name.startsWith('MUST'))
  const recommendations = audits.filter((audit) => !audit.name.startsWith('MUST'))
  const recorded = new Map<string, AuditResult>()

  beforeAll(async () => {
    server = await startServer(backend)
  })
  afterAll(() => server?.close())

  it('has MUST, SHOULD and MAY audits to run', () => {
    expect(musts.length).toBeGreaterThan(0)
    expect(recommendations.length).toBeGreaterThan(0)
    expect(musts.length + recommendations.length).toBe(audits.length)
  })

  it('includes 0222, the null extensions Mercurius refuses out of the box', () => {
    expect(musts.map((audit) => audit.id)).toContain('0222')
  })

  describe('MUST', () => {
    for (const audit of musts) {
      it(`${audit.id} ${audit.name}`, async () => {
        const result = await audit.fn()
        expect(result.status, await describeFailure(result)).toBe('ok')
      })
    }
  })

  describe('SHOULD and MAY', () => {
    for (const audit of recommendations) {
      it(`${audit.id} ${audit.name} (recorded, not required)`, async () => {
        const result = await audit.fn()
        recorded.set(audit.id, result)
        expect(['ok', 'warn', 'notice']).toContain(result.status)
      })
    }

    it('reports SHOULD and MAY audits', async () => {
      // Run here whatever a filter (-t) kept the tests above from running.
      for (const audit of recommendations) {
        if (!recorded.has(audit.id)) recorded.set(audit.id, await audit.fn())
      }
      const lines = await Promise.all(
        recommendations.map(async (audit) => {
          const result = recorded.get(audit.id) as AuditResult
          const detail = result.status === 'ok' ? '' : ` — ${await describeFailure(result)}`
          return `  ${result.status.padEnd(6)} ${audit.id} ${audit.name}${detail}`
        }),
      )
      const failing = [...recorded.values()].filter((result) => result.status !== 'ok').length
      console.log(
        `GraphQL over HTTP SHOULD/MAY audits on ${backend.name}: ` +
          `${recommendations.length - failing} ok, ${failing} not met\n${lines.join('\n')}`,
      )
      for (const audit of recommendations) {
        expect(['ok', 'warn', 'notice'], audit.id).toContain(recorded.get(audit.id)?.status)
      }
    })
  })

  describe('GET and introspection', () => {
    const get = async (query: string) => {
      const url = new URL(`${server.baseUrl}/graphql`)
      url.searchParams.set('query', query)
      const response = await fetch(url, { headers: { accept: 'application/json' } })
      return { status: response.status, text: await response.text(), response }
    }

    it('answers a query sent as GET /graphql?query={__typename}', async () => {
      const { status, text, response } = await get('{__typename}')
      expect(status, text).toBe(200)
      expect(response.headers.get('content-type')).toContain('application/json')
      expect(JSON.parse(text)).toEqual({ data: { __typename: 'Query' } })
    })

    // The spec: "the server MUST respond with error status code 405 (Method Not Allowed)
    // and halt execution"; 400 is accepted here too, an error either way.
    it('rejects a mutation sent as GET with 405 (or 400) and an error', async () => {
      const { status, text } = await get(SEND_OVER_GET)
      expect([400, 405], text).toContain(status)
      const body = JSON.parse(text)
      expect(body.errors, text).toEqual([expect.objectContaining({ message: expect.any(String) })])
      expect(body.data ?? null, text).toBeNull()
    })

    it('does not run a mutation sent as GET: nothing is stored', async () => {
      const { text } = await get(SEND_OVER_GET)
      expect(JSON.parse(text).errors, text).toBeDefined()
      const listed = await graphql(server.baseUrl, '{ messages { id } }')
      expect(listed.status).toBe(200)
      expect(listed.body, JSON.stringify(listed.body)).toEqual({ data: { messages: [] } })
      expect(await server.testDatabase.database.db.select().from(messages)).toEqual([])
    })

    it('answers introspection', async () => {
      const response = await graphql(server.baseUrl, '{ __schema { queryType { name } } }')
      expect(response.status).toBe(200)
      expect(response.body).toEqual({ data: { __schema: { queryType: { name: 'Query' } } } })
    })
  })
})
