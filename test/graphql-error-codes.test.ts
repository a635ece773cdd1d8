import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import type { DomainModule } from '../src/domains/domain-module.js'
import { createDomainModules } from '../src/domains/module-list.js'
import { GRAPHQL_CODES } from '../src/graphql/errors.js'
import { AppError, type ErrorCode } from '../src/platform/errors.js'
import { backends } from './helpers/backends.js'
import { graphql } from './helpers/graphql.js'
import { startServer, type TestServer } from './helpers/server.js'

/** The error catalogue as openapi.yaml publishes it. */
const catalogue: ErrorCode[] = parse(readFileSync('openapi.yaml', 'utf8')).components.schemas
  .ErrorCode.enum

describe.each(backends)('GraphQL error codes on $name', (backend) => {
  // Message.text fails with the error whose code the message's text names.
  const failing: DomainModule = {
    name: 'failing-texts',
    resolvers: {
      Message: {
        text: (row) => {
          throw new AppError(row.text as ErrorCode, 400, `failed with ${row.text}`)
        },
      },
    },
  }
  let server: TestServer
  beforeAll(async () => {
    server = await startServer(
      backend,
      {},
      { modules: (infrastructure) => [...createDomainModules(infrastructure), failing] },
    )
  })
  afterAll(() => server?.close())

  it('gives every code of the catalogue its own extensions.code, never INTERNAL_SERVER_ERROR by accident', async () => {
    const seen: Record<string, unknown> = {}
    // One chat per code: a failing non-null field nulls its whole list, with one error.
    for (const code of catalogue) {
      const sent = await graphql(
        server.baseUrl,
        'mutation($text: String!, $chat: ID!) { sendMessage(text: $text, author: "codes", chatId: $chat) { id } }',
        { text: code, chat: code },
      )
      expect(sent.body.errors).toBeUndefined()
      const response = await graphql(
        server.baseUrl,
        'query($code: ID!) { messages(chatId: $code) { text } }',
        {
          code,
        },
      )
      const [error] = response.body.errors ?? []
      expect(error?.message).toBe(`failed with ${code}`)
      seen[code] = error?.extensions?.code
    }
    // Every code reaches the client through the table, and only an internal error reads
    // as one: CONFLICT, RATE_LIMITED and UNAVAILABLE once fell to INTERNAL_SERVER_ERROR.
    expect(seen).toEqual(Object.fromEntries(catalogue.map((code) => [code, GRAPHQL_CODES[code]])))
    const internal = catalogue.filter((code) => seen[code] === 'INTERNAL_SERVER_ERROR')
    expect(internal).toEqual(['INTERNAL'])
    expect([seen.CONFLICT, seen.RATE_LIMITED, seen.UNAVAILABLE]).toEqual([
      'CONFLICT',
      'RATE_LIMITED',
      'UNAVAILABLE',
    ])
  })
})
