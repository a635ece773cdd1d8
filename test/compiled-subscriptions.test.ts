import {
  buildSchema,
  type ExecutionResult,
  GraphQLError,
  type GraphQLObjectType,
  parse,
} from 'graphql'
import { describe, expect, it, vi } from 'vitest'
import { LIMITS } from '../src/graphql/limits.js'
import { createCompiledSubscriptions } from '../src/graphql/websocket/compiled-subscriptions.js'

const compileQuery = vi.hoisted(() => vi.fn())
vi.mock('graphql-jit', async (importOriginal) => {
  const jit = await importOriginal<typeof import('graphql-jit')>()
  compileQuery.mockImplementation(jit.compileQuery)
  return { ...jit, compileQuery }
})

async function* ticks(count: number) {
  for (let at = 1; at <= count; at += 1) yield { tick: { at, label: `tick ${at}` } }
}

const schema = buildSchema(`
  type Tick { at: Int!, label: String!, shout(times: Int!): String! }
  type Query { ok: Boolean }
  type Subscription { tick(count: Int!): Tick, silence: Int }
`)
const fieldsOf = (type: string) => (schema.getType(type) as GraphQLObjectType).getFields()
Object.assign(fieldsOf('Tick').shout as object, {
  resolve: (tick: { label: string }, { times }: { times: number }) => tick.label.repeat(times),
})
Object.assign(fieldsOf('Subscription').tick as object, {
  subscribe: (_root: unknown, { count }: { count: number }) => {
    if (count < 0) throw new GraphQLError('count must not be negative')
    return ticks(count)
  },
})

/** A stream that never yields, and tells when it is ended. */
const silence = { ended: false }
Object.assign(fieldsOf('Subscription').silence as object, {
  subscribe: () => ({
    next: () => new Promise(() => {}),
    return: async () => {
      silence.ended = true
      return { value: undefined, done: true }
    },
    [Symbol.asyncIterator]() {
      return this
    },
  }),
})

const TICKS = 'subscription($count: Int!) { tick(count: $count) { at label shout(times: 2) } }'

/** What one subscription delivers, as graphql-ws would run it after its admission. */
async function run(
  compiled: ReturnType<typeof createCompiledSubscriptions>,
  query: string,
  variableValues: Record<string, unknown>,
) {
  const document = parse(query)
  compiled.admitted(schema, { query }, document)
  const result = await compiled.subscribe({ schema, document, variableValues, contextValue: {} })
  if (!(Symbol.asyncIterator in result)) return result
  const delivered: ExecutionResult[] = []
  for await (const each of result) delivered.push(each)
  return delivered
}

describe('subscriptions compiled by graphql-jit', () => {
  it('interprets an operation seen once, and compiles it when it comes again', async () => {
    compileQuery.mockClear()
    const compiled = createCompiledSubscriptions()
    const interpreted = await run(compiled, TICKS, { count: 3 })
    expect(compileQuery).not.toHaveBeenCalled()
    const firstCompiled = await run(compiled, TICKS, { count: 3 })
    const again = await run(compiled, TICKS, { count: 3 })
    expect(compileQuery).toHaveBeenCalledTimes(1)
    expect(firstCompiled).toEqual(interpreted)
    expect(again).toEqual(interpreted)
    expect(interpreted).toEqual(
      [1, 2, 3].map((at) => ({
        data: { tick: { at, label: `tick ${at}`, shout: `tick ${at}tick ${at}` } },
      })),
    )
  })

  it(`keeps ${LIMITS.documentsKept} operations: the oldest, when it returns, is counted anew`, async () => {
    compileQuery.mockClear()
    const compiled = createCompiledSubscriptions()
    const operation = (index: number) => `subscription Op${index} { tick(count: 1) { at } }`
    const seenTwice = async (index: number) => {
      for (const _ of [1, 2]) await run(compiled, operation(index), {})
    }
    for (let index = 0; index <= LIMITS.documentsKept; index += 1) await seenTwice(index)
    expect(compileQuery).toHaveBeenCalledTimes(LIMITS.documentsKept + 1)
    await run(compiled, operation(0), {})
    expect(compileQuery).toHaveBeenCalledTimes(LIMITS.documentsKept + 1)
    await run(compiled, operation(0), {})
    expect(compileQuery).toHaveBeenCalledTimes(LIMITS.documentsKept + 2)
  })

  it('gives the field its own arguments, inline or through a variable of another name', async () => {
    const compiled = createCompiledSubscriptions()
    for (const _ of ['interpreted', 'compiled']) {
      const inline = await run(compiled, 'subscription { tick(count: 2) { at } }', {})
      expect(inline).toEqual([{ data: { tick: { at: 1 } } }, { data: { tick: { at: 2 } } }])
      const renamed = await run(compiled, 'subscription($n: Int!) { tick(count: $n) { at } }', {
        n: 1,
      })
      expect(renamed).toEqual([{ data: { tick: { at: 1 } } }])
    }
  })

  it('ends the stream at once when the subscription ends, though no event came', async () => {
    const compiled = createCompiledSubscriptions()
    const query = 'subscription { silence }'
    for (const _ of ['interpreted', 'compiled']) {
      silence.ended = false
      const document = parse(query)
      compiled.admitted(schema, { query }, document)
      const results = (await compiled.subscribe({
        schema,
        document,
      })) as AsyncIterableIterator<ExecutionResult>
      const waiting = results.next()
      await results.return?.()
      expect(silence.ended).toBe(true)
      void waiting
    }
  })

  it("refuses a subscription its resolver refuses, compiled or not, with the resolver's message", async () => {
    const compiled = createCompiledSubscriptions()
    const refusals = [
      await run(compiled, TICKS, { count: -1 }),
      await run(compiled, TICKS, { count: -1 }),
    ]
    for (const refusal of refusals) {
      expect(refusal).toMatchObject({ errors: [{ message: 'count must not be negative' }] })
    }
  })

  it('refuses variables of the wrong type, compiled or not', async () => {
    const compiled = createCompiledSubscriptions()
    await run(compiled, TICKS, { count: 1 })
    const refusal = await run(compiled, TICKS, { count: 'three' })
    expect(refusal).toMatchObject({ errors: [{ message: expect.stringMatching(/\$count/) }] })
  })

  it('leaves queries to graphql-ws', async () => {
    compileQuery.mockClear()
    const compiled = createCompiledSubscriptions()
    for (const _ of [1, 2, 3]) compiled.admitted(schema, { query: '{ ok }' }, parse('{ ok }'))
    expect(compileQuery).not.toHaveBeenCalled()
  })
})
