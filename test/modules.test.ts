import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DomainModule, Infrastructure } from '../src/domains/domain-module.js'
import { createDomainModules } from '../src/domains/module-list.js'
import { backends, type TestDatabase } from './helpers/backends.js'
import { graphql } from './helpers/graphql.js'
import { startServer } from './helpers/server.js'

/** The service's modules and one more, as a later domain would plug in. */
const withModule =
  (extra: DomainModule) =>
  (infrastructure: Infrastructure): DomainModule[] => [
    ...createDomainModules(infrastructure),
    extra,
  ]

describe.each(backends)('domain modules on $name', (backend) => {
  let testDatabase: TestDatabase
  beforeAll(async () => {
    testDatabase = await backend.open()
  })
  afterAll(() => testDatabase?.drop())

  const serve = (modules: (infrastructure: Infrastructure) => readonly DomainModule[]) =>
    startServer(backend, {}, { testDatabase, modules })

  it('refuses to start when two modules answer one operationId, and names both', async () => {
    const rogue = {
      name: 'rogue',
      handlers: { getHealth: async () => ({ data: { status: 'ok' } }) },
    }
    await expect(serve(withModule(rogue as DomainModule))).rejects.toThrow(
      'operation getHealth is claimed by both the health and rogue modules',
    )
  })

  it('refuses to start when two modules resolve one GraphQL field, and names both', async () => {
    const rogue: DomainModule = { name: 'rogue', resolvers: { Query: { messages: () => [] } } }
    await expect(serve(withModule(rogue))).rejects.toThrow(
      'GraphQL field Query.messages is claimed by both the chat and rogue modules',
    )
  })

  it('counts a batched field as a claim like a resolved one', async () => {
    const rogue: DomainModule = {
      name: 'rogue',
      loaders: { Message: { id: async (queries) => queries.map(() => 'x') } },
    }
    await expect(serve(withModule(rogue))).rejects.toThrow(
      'GraphQL field Message.id is claimed by both the chat and rogue modules',
    )
  })

  it("merges resolver maps field by field: a module's field joins the others of its type", async () => {
    const shouting: DomainModule = {
      name: 'shouting',
      resolvers: { Message: { author: (row) => row.author.toUpperCase() } },
    }
    const server = await serve(withModule(shouting))
    try {
      const sent = await graphql(
        server.baseUrl,
        'mutation { sendMessage(text: "hi", author: "ann", chatId: "merge") { id author createdAt } }',
      )
      expect(sent.body.errors).toBeUndefined()
      const { sendMessage } = sent.body.data
      // Message.author from one module; Message.id and createdAt still from chat's.
      expect(sendMessage).toMatchObject({ author: 'ANN', id: expect.stringMatching(/^\d+$/) })
      expect(new Date(sendMessage.createdAt).toISOString()).toBe(sendMessage.createdAt)
      const listed = await graphql(server.baseUrl, '{ messages(chatId: "merge") { author } }')
      expect(listed.body.data.messages).toEqual([{ author: 'ANN' }])
    } finally {
      await server.close()
    }
  })

  it('starts modules in order before the first request and stops them in reverse on close', async () => {
    const calls: string[] = []
    const tracked = (name: string): DomainModule => ({
      name,
      start: async () => {
        calls.push(`start ${name}`)
      },
      stop: async () => {
        calls.push(`stop ${name}`)
      },
    })
    const server = await serve((infrastructure) => [
      ...createDomainModules(infrastructure),
      tracked('first'),
      { ...tracked('broken'), stop: () => Promise.reject(new Error('cannot stop')) },
      tracked('last'),
    ])
    expect(calls).toEqual(['start first', 'start broken', 'start last'])
    expect((await server.api.get('/health')).status).toBe(200)
    await server.close()
    // A module that fails to stop does not keep the others from stopping.
    expect(calls.slice(3)).toEqual(['stop last', 'stop first'])
  })

  it('does not start when a module fails to start', async () => {
    const failing: DomainModule = {
      name: 'failing',
      start: () => Promise.reject(new Error('the queue is unreachable')),
    }
    await expect(serve(withModule(failing))).rejects.toThrow('the queue is unreachable')
  })
})
