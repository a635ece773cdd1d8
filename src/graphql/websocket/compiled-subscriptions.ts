import {
  createSourceEventStream,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLSchema,
  getOperationAST,
  subscribe,
} from 'graphql'
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit'
import { setNewest } from '../../platform/newest-entries.js'
import { LIMITS } from '../limits.js'

/**
 * Distinct subscription operations kept, compiled or counted; the oldest go first. A
 * compiled one near the token limit holds hundreds of kilobytes.
 */
const KEPT = LIMITS.documentsKept

/**
 * Subscriptions over `graphql-transport-ws` whose events are executed by graphql-jit, as
 * Mercurius runs queries over HTTP: an event is executed once per subscriber, and
 * graphql-js's interpreter doing it was the largest part of what an event cost the
 * server through the fan-out benchmark. The subscription itself is
 * still made by graphql-js: graphql-jit 0.8's `subscribe` hands the operation's variables
 * to the field's resolver as its arguments, so an argument given inline, or through a
 * variable of another name, would be lost (a chat's subscriber would get every chat). As with
 * Mercurius's `jit: 1`, an operation is compiled the second time it is seen (compiling
 * costs far more than one execution), so a one-off operation never pays for it; a
 * document graphql-jit cannot compile runs on graphql-js.
 */
export function createCompiledSubscriptions() {
  const seen = new Map<string, CompiledQuery | 'once' | 'interpreted'>()
  const compiledDocuments = new WeakMap<DocumentNode, CompiledQuery>()

  function compiledFor(
    schema: GraphQLSchema,
    document: DocumentNode,
    operationName: string | undefined,
    key: string,
  ) {
    const known = seen.get(key)
    if (known !== undefined && known !== 'once') return known
    if (known === undefined) {
      setNewest(seen, key, 'once', KEPT)
      return 'once'
    }
    const compiled = compileQuery(schema, document, operationName)
    const result = isCompiledQuery(compiled) && compiled.subscribe ? compiled : 'interpreted'
    setNewest(seen, key, result, KEPT)
    return result
  }

  return {
    /** Told of each admitted operation: it may be compiled now. */
    admitted(
      schema: GraphQLSchema,
      { query, operationName }: { query: string; operationName?: string | null | undefined },
      document: DocumentNode,
    ) {
      const name = operationName ?? undefined
      if (getOperationAST(document, name)?.operation !== 'subscription') return
      const compiled = compiledFor(schema, document, name, `${name ?? ''}\n${query}`)
      if (typeof compiled !== 'string') compiledDocuments.set(document, compiled)
    },

    /** graphql-ws's `subscribe`: each event executed by the compiled operation, if any. */
    async subscribe(args: ExecutionArgs) {
      const compiled = compiledDocuments.get(args.document)
      if (!compiled) return subscribe(args)
      const events = await createSourceEventStream(args)
      if (!(Symbol.asyncIterator in events)) return events
      return eachExecuted(events[Symbol.asyncIterator](), (event) =>
        compiled.query(event, args.contextValue, args.variableValues),
      )
    },
  }
}

/**
 * The results of executing each event of a stream, as graphql-js maps its own: ending
 * the results ends the stream at once, even while it waits for its next event.
 */
function eachExecuted(
  events: AsyncIterator<unknown>,
  execute: (event: unknown) => ExecutionResult | Promise<ExecutionResult>,
): AsyncIterableIterator<ExecutionResult> {
  const executed = async (
    next: IteratorResult<unknown>,
  ): Promise<IteratorResult<ExecutionResult>> => {
    if (next.done) return { value: undefined, done: true }
    try {
      return { value: await execute(next.value), done: false }
    } catch (error) {
      await events.return?.()
      throw error
    }
  }
  const results: AsyncIterableIterator<ExecutionResult> = {
    next: async () => executed(await events.next()),
    return: async () => {
      await events.return?.()
      return { value: undefined, done: true }
    },
    throw: async (error) => {
      if (events.throw) return executed(await events.throw(error))
      throw error
    },
    [Symbol.asyncIterator]: () => results,
  }
  return results
}
