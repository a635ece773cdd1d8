import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { storedDataProblems } from './helpers/fuzz/invariants.js'
import { restOperations } from './helpers/fuzz/rest-operations.js'
import { exchange } from './helpers/fuzz/rest-oracle.js'
import { invalidRequests, validRequests } from './helpers/fuzz/rest-requests.js'
import { FUZZ, fuzz, PROPERTY_TIMEOUT_MS } from './helpers/fuzz/settings.js'
import { createWorld, generationOf, type World } from './helpers/fuzz/world.js'

/**
 * Every operation of openapi.yaml driven with requests generated from its schemas:
 * valid ones are answered as the operation's rules say, flawed ones are refused in the
 * envelope and change nothing, none reaches a 5xx, and what is stored stays valid.
 * FUZZ_RUNS cases per property, from FUZZ_SEED (see helpers/fuzz/settings.ts).
 */
describe.each(backends)(
  `REST fuzzing on $name (${FUZZ.runs} runs, seed ${FUZZ.seed})`,
  (backend) => {
    let world: World
    beforeAll(async () => {
      world = await createWorld(backend)
    })
    afterAll(() => world?.server.close())

    describe.each(restOperations)('$method $template ($operationId)', (operation) => {
      it(
        'answers valid input as the spec and its rules say',
        () =>
          fuzz(
            `${operation.operationId} valid`,
            validRequests(operation, generationOf(world)),
            (request) => exchange(world, operation, request),
          ),
        PROPERTY_TIMEOUT_MS,
      )

      it(
        'refuses flawed input in the envelope, changing nothing',
        () =>
          fuzz(
            `${operation.operationId} flawed`,
            invalidRequests(operation, generationOf(world)),
            (request) => exchange(world, operation, request),
          ),
        PROPERTY_TIMEOUT_MS,
      )
    })

    it('leaves only valid data stored', async () => {
      expect(await storedDataProblems(world.db)).toEqual([])
    })
  },
)
