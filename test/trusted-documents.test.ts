import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { GraphQLError } from 'graphql'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../src/config.js'
import { parseOperation } from '../src/graphql/limits.js'
import { backends } from './helpers/backends.js'
import { subscriptionsActive } from './helpers/graphql.js'
import {
  acknowledgedSocket,
  get,
  overSocket,
  persistedQuery,
  post,
  SUBPROTOCOLS,
  sha256,
} from './helpers/persisted.js'
import type { RawSocket } from './helpers/raw-socket.js'
import { startServer, type TestServer } from './helpers/server.js'

const run = promisify(execFile)

/**
 * The manifest a client team gets from graphql-codegen's client preset with
 * `persistedDocuments: true`, made from the documents of the SDK scenario (the ones
 * test/sdk/codegen.yml reads): `{ "sha256:<hex>": "<document>" }`.
 */
async function clientPresetManifest(directory: string) {
  const config = join(directory, 'codegen.yml')
  await writeFile(
    config,
    [
      'schema: ./schema.graphql',
      'documents: ./test/sdk/scenario.ts',
      'generates:',
      `  ${join(directory, 'gql')}/:`,
      '    preset: client',
      '    presetConfig:',
      '      persistedDocuments: true',
    ].join('\n'),
  )
  await run('npx', ['graphql-codegen', '--config', config])
  const path = join(directory, 'gql', 'persisted-documents.json')
  return { path, documents: JSON.parse(await readFile(path, 'utf8')) as Record<string, string> }
}

const NOT_TRUSTED = {
  errors: [
    {
      message: 'Only trusted documents run on this server, and this document is not one of them',
      extensions: { code: 'DOCUMENT_NOT_TRUSTED' },
    },
  ],
}
const UNTRUSTED = 'query { messages(chatId: "trusted") { id text author chatId } }'
/** What would fail to parse, each in its own way, were it parsed. */
const UNPARSABLE = ['query { messages(', `query { ${'me { id } '.repeat(600)} }`]

let directory: string
let manifest: Awaited<ReturnType<typeof clientPresetManifest>>
/** The key and document of an operation of the manifest, by its name. */
const entry = (name: string) => {
  const found = Object.entries(manifest.documents).find(([, text]) => text.includes(` ${name}(`))
  if (!found) throw new Error(`no ${name} in the manifest`)
  const [documentId, query] = found
  return { documentId, hash: documentId.replace('sha256:', ''), query }
}

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'trusted-documents-'))
  manifest = await clientPresetManifest(directory)
}, 60_000)
afterAll(() => rm(directory, { recursive: true, force: true }))

describe.each(backends)('trusted documents on $name', (backend) => {
  let server: TestServer
  const sockets: RawSocket[] = []
  const chatId = 'trusted'

  beforeAll(async () => {
    server = await startServer(backend, { GRAPHQL_TRUSTED_DOCUMENTS: manifest.path })
    const { documentId } = entry('SendMessage')
    const sent = await post(server.baseUrl, {
      documentId,
      variables: { text: 'by id', author: 'trusted', chatId },
    })
    expect(sent.body.errors).toBeUndefined()
  })
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.ws.terminate()
  })
  afterAll(() => server?.close())

  const listed = {
    data: { messages: [{ author: 'trusted', id: expect.any(String), text: 'by id' }] },
  }
  const variables = { chatId }

  it('runs a document of the manifest by documentId, by hash and by its text, over POST and GET', async () => {
    const { documentId, hash, query } = entry('ListMessages')
    const requests = [
      { documentId, variables },
      { documentId: hash, variables },
      { extensions: persistedQuery(hash), variables },
      { query, variables },
      { query, extensions: persistedQuery(hash), variables },
    ]
    for (const request of requests) {
      expect(await post(server.baseUrl, request)).toEqual({ status: 200, body: listed })
      expect(await get(server.baseUrl, request)).toEqual({ status: 200, body: listed })
    }
  })

  it('refuses any other document on POST and GET, registration included, with DOCUMENT_NOT_TRUSTED', async () => {
    const unknownHash = sha256(UNTRUSTED)
    const requests = [
      { query: UNTRUSTED },
      { query: UNTRUSTED, extensions: persistedQuery(unknownHash) },
      { extensions: persistedQuery(unknownHash) },
      { documentId: unknownHash },
      { documentId: `sha256:${unknownHash}` },
    ]
    for (const request of requests) {
      expect(await post(server.baseUrl, request)).toEqual({ status: 200, body: NOT_TRUSTED })
      expect(await get(server.baseUrl, request)).toEqual({ status: 200, body: NOT_TRUSTED })
    }
  })

  it('refuses an untrusted document before parsing it: a broken one or one over the token limit', async () => {
    for (const query of UNPARSABLE) {
      expect(() => parseOperation(query)).toThrow(GraphQLError)
      expect(await post(server.baseUrl, { query })).toEqual({ status: 200, body: NOT_TRUSTED })
    }
  })

  it.each(SUBPROTOCOLS)(
    'runs trusted documents over $protocol, and refuses others with an error message',
    async (subprotocol) => {
      const socket = await acknowledgedSocket(server.baseUrl, subprotocol)
      sockets.push(socket)
      const { documentId, hash, query } = entry('ListMessages')
      for (const payload of [
        { documentId, variables },
        { extensions: persistedQuery(hash), variables },
        { query, variables },
      ]) {
        expect(await overSocket(socket, subprotocol, payload)).toEqual({
          type: 'result',
          body: listed,
        })
      }
      for (const payload of [
        { query: UNTRUSTED },
        { query: UNTRUSTED, extensions: persistedQuery(sha256(UNTRUSTED)) },
        { documentId: sha256(UNTRUSTED) },
        ...UNPARSABLE.map((text) => ({ query: text })),
      ]) {
        expect(await overSocket(socket, subprotocol, payload)).toEqual({
          type: 'error',
          body: NOT_TRUSTED,
        })
      }
    },
  )

  it.each(SUBPROTOCOLS)('subscribes by documentId over $protocol', async (subprotocol) => {
    const socket = await acknowledgedSocket(server.baseUrl, subprotocol)
    sockets.push(socket)
    const before = server.events.activeSubscriptions()
    const followed = `followed-${subprotocol.subscribe}`
    socket.send({
      id: 'follow',
      type: subprotocol.subscribe,
      payload: { documentId: entry('MessageAdded').documentId, variables: { chatId: followed } },
    })
    await subscriptionsActive(server.events, before + 1)
    await post(server.baseUrl, {
      documentId: entry('SendMessage').documentId,
      variables: { text: 'live', author: 'trusted', chatId: followed },
    })
    expect(await socket.next()).toMatchObject({
      id: 'follow',
      type: subprotocol.next,
      payload: { data: { messageAdded: { text: 'live' } } },
    })
  })
})

describe('GRAPHQL_TRUSTED_DOCUMENTS at start', () => {
  const hash = sha256('{ me { id } }')
  it.each([
    ['a file that is missing', undefined, 'cannot be read (ENOENT)'],
    ['a file that is not JSON', '{ "a": ', 'is not JSON'],
    ['a list', '[]', 'must hold a JSON object'],
    [
      'a key that is not a SHA-256',
      JSON.stringify({ ListMessages: '{ me { id } }' }),
      'not a SHA-256',
    ],
    [
      'a document that is not text',
      JSON.stringify({ [hash]: { query: '{ me { id } }' } }),
      'not text',
    ],
    [
      'a key that is not the hash of its document',
      JSON.stringify({ [hash]: '{ me { name } }' }),
      'not the SHA-256 of its document',
    ],
  ])('refuses %s, in words', async (_case, content, words) => {
    const path = join(directory, `manifest-${sha256(String(content)).slice(0, 8)}.json`)
    if (content !== undefined) await writeFile(path, content)
    const load = () => loadConfig({ GRAPHQL_TRUSTED_DOCUMENTS: path })
    expect(load).toThrow(ConfigError)
    expect(load).toThrow('Invalid configuration: GRAPHQL_TRUSTED_DOCUMENTS ')
    expect(load).toThrow(words)
  })

  it("accepts the client preset's manifest, and keys of the hex alone", async () => {
    const path = join(directory, 'hex-keys.json')
    await writeFile(path, JSON.stringify({ [hash]: '{ me { id } }' }))
    expect(loadConfig({ GRAPHQL_TRUSTED_DOCUMENTS: path }).trustedDocuments?.byHash.get(hash)).toBe(
      '{ me { id } }',
    )
    const fromPreset = loadConfig({ GRAPHQL_TRUSTED_DOCUMENTS: manifest.path }).trustedDocuments
    expect(fromPreset?.byHash.size).toBe(Object.keys(manifest.documents).length)
  })
})
