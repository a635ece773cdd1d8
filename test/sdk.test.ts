import { execFile } from 'node:child_process'
import { rm } from 'node:fs/promises'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { subscriptionsActive } from './helpers/graphql.js'
import { ADMIN, startServer, type TestServer } from './helpers/server.js'

const run = promisify(execFile)
const WEBHOOK_SECRET = 'a-webhook-secret-for-sdk-tests'

/** What a client team runs (the README's "For client teams" gives the same commands). */
const GENERATE = [
  'npx openapi-typescript openapi.yaml -o test/sdk/generated/openapi.ts',
  'npx openapi-typescript generated/openapi.v2.yaml -o test/sdk/generated/openapi.v2.ts',
  'npx graphql-codegen --config test/sdk/codegen.yml',
  'npx openapi-ts -i openapi.yaml -o test/sdk/generated/hey-api -c @hey-api/client-fetch',
]
const COMPILE = 'npx tsc -p test/sdk/tsconfig.json'

const shell = (command: string) => {
  const [file, ...args] = command.split(' ')
  return run(file as string, args, { maxBuffer: 16 * 1024 * 1024 })
}

/** test/sdk/scenario.ts, which compiles only once its clients are generated. */
interface Scenario {
  restScenario(baseUrl: string, admin: typeof ADMIN): Promise<unknown>
  restScenarioV2(baseUrl: string, admin: typeof ADMIN): Promise<unknown>
  graphqlScenario(baseUrl: string, waitForSubscription: () => Promise<void>): Promise<unknown>
  orderScenario(
    baseUrl: string,
    admin: typeof ADMIN,
    webhookSecret: string,
    waitForSubscription: () => Promise<void>,
  ): Promise<unknown>
}
const SCENARIO = './sdk/scenario.js'

describe('clients generated from the specs', () => {
  let scenario: Scenario

  beforeAll(async () => {
    await rm('test/sdk/generated', { recursive: true, force: true })
    for (const command of GENERATE) await shell(command)
  }, 120_000)

  it('compile under tsc --strict, both REST generators and the GraphQL documents', async () => {
    await expect(shell(COMPILE)).resolves.toBeDefined()
    scenario = (await import(/* @vite-ignore */ SCENARIO)) as Scenario
  }, 120_000)

  describe.each(backends)('drive the server on $name', (backend) => {
    let server: TestServer

    beforeAll(async () => {
      server = await startServer(backend, { WEBHOOK_SECRET })
    })
    afterAll(() => server?.close())

    it('through openapi-fetch: sign up, log in, refresh, and every product operation', async () => {
      expect(await scenario.restScenario(server.baseUrl, ADMIN)).toEqual({
        signedUp: expect.stringMatching(/^sdk-\d+@example\.com$/),
        tokenType: 'Bearer',
        listedTotal: 1,
        readName: 'SDK lamp',
        updatedStock: 7,
        deletedStatus: 204,
        goneCode: 'GONE',
      })
    })

    it('through openapi-fetch over the v2 description: the same operations, in the v2 envelope', async () => {
      expect(await scenario.restScenarioV2(server.baseUrl, ADMIN)).toEqual({
        location: true,
        requestIdEchoed: true,
        listedTotal: 1,
        readName: 'SDK v2 lamp',
        answeredBy: '2',
        notModified: 304,
        missingCode: 'NOT_FOUND',
      })
    })

    it('through typed documents: send, list and subscribe', async () => {
      const result = await scenario.graphqlScenario(server.baseUrl, () =>
        subscriptionsActive(server.events, 1),
      )
      expect(result).toEqual({
        sentChat: expect.stringMatching(/^sdk-/),
        listed: ['typed hello'],
        live: 'typed hello',
      })
    })

    it('through both: place an order, pay it by a signed webhook, follow it live, cancel it', async () => {
      // The chat scenario's subscription may still be closing: wait, so ours is the one counted.
      await expect.poll(() => server.events.activeSubscriptions()).toBe(0)
      const result = await scenario.orderScenario(server.baseUrl, ADMIN, WEBHOOK_SECRET, () =>
        subscriptionsActive(server.events, 1),
      )
      expect(result).toEqual({
        replayed: 'true',
        sameOrder: true,
        receipt: { id: expect.stringMatching(/^evt_/), duplicate: false, applied: true },
        readBack: 'PAID',
        cancelled: 'CANCELLED',
        statusesSeenLive: ['PENDING', 'PAID', 'CANCELLED'],
        finalStatus: 'CANCELLED',
        stock: { before: 5, ordered: 3, after: 5 },
      })
    })
  })
})
