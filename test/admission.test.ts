import type { FastifyRequest } from 'fastify'
import { buildSchema, type GraphQLSchema } from 'graphql'
import { describe, expect, it, vi } from 'vitest'
import { createPersistedDocuments } from '../src/graphql/persisted-documents.js'
import { createPersistedQueryStore } from '../src/graphql/persisted-query-store.js'
import { createAdmission } from '../src/graphql/websocket/admission.js'

const validate = vi.hoisted(() => vi.fn())
vi.mock('graphql', async (importOriginal) => {
  const graphql = await importOriginal<typeof import('graphql')>()
  validate.mockImplementation(graphql.validate)
  return { ...graphql, validate }
})

const SDL = `
  type Page { items(limit: Int!): [String!]! }
  type Query { page: Page }
  type Subscription { tick: Int }
`
const FOLLOW = 'subscription { tick }'
const PAGES = 'query($n: Int!) { a: page { items(limit: $n) } b: page { items(limit: $n) } }'
const upgrade = {} as FastifyRequest

function admissionOn(schema: () => GraphQLSchema) {
  const documents = createPersistedDocuments({
    trusted: undefined,
    store: createPersistedQueryStore(undefined),
  })
  return createAdmission({
    schema,
    operationBudget: undefined,
    rules: { introspection: true },
    documents,
  })
}

const documentOf = (admission: Awaited<ReturnType<ReturnType<typeof admissionOn>>>) =>
  'document' in admission ? admission.document : undefined

/**
 * The WebSocket's admission reads and checks each document's text once per schema, as
 * Mercurius does over HTTP: a crowd subscribing with the same document costs one parse
 * and one validation, and each operation's variables are still weighed.
 */
describe('admission of WebSocket operations', () => {
  it('parses and validates a document seen before only once', async () => {
    const schema = buildSchema(SDL)
    const admit = admissionOn(() => schema)
    validate.mockClear()
    const first = documentOf(await admit(upgrade, 'caller', { query: FOLLOW }))
    const calls = validate.mock.calls.length
    const second = documentOf(await admit(upgrade, 'other caller', { query: FOLLOW }))
    expect(first).toBeDefined()
    expect(second).toBe(first)
    expect(validate.mock.calls.length).toBe(calls)
  })

  it('checks a document anew under a new schema', async () => {
    let schema = buildSchema(SDL)
    const admit = admissionOn(() => schema)
    const before = documentOf(await admit(upgrade, 'caller', { query: FOLLOW }))
    schema = buildSchema(SDL.replace('tick: Int', 'tock: Int'))
    const after = await admit(upgrade, 'caller', { query: FOLLOW })
    expect(after).toEqual({ errors: [expect.objectContaining({ message: expect.any(String) })] })
    expect(documentOf(after)).toBeUndefined()
    expect(before).toBeDefined()
  })

  it("weighs each operation's variables, whatever an earlier one of the document weighed", async () => {
    const schema = buildSchema(SDL)
    const admit = admissionOn(() => schema)
    const pages = (n: number) => admit(upgrade, 'caller', { query: PAGES, variables: { n } })
    expect(documentOf(await pages(10))).toBeDefined()
    expect(await pages(5000)).toEqual({
      errors: [expect.objectContaining({ message: expect.stringMatching(/^The operation costs/) })],
    })
    expect(documentOf(await pages(10))).toBeDefined()
  })

  it('refuses a document that cannot be parsed each time it comes', async () => {
    const admit = admissionOn(() => buildSchema(SDL))
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const refused = await admit(upgrade, 'caller', { query: 'subscription {' })
      expect(refused).toEqual({
        errors: [expect.objectContaining({ message: expect.stringMatching(/^Syntax Error/) })],
      })
    }
  })
})
