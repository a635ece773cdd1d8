import type { Sql } from 'postgres'
import type { Tracing } from '../platform/telemetry/tracing.js'

/** Starts a statement's span; tracing.ts's, when tracing is on. */
export type StatementSpans = Pick<Tracing, 'startStatement'>

type Callback = (sql: Sql) => unknown

/**
 * postgres.js with a span around every statement sent, in transactions too: it has no
 * OpenTelemetry instrumentation, and every statement of drizzle and of prepareRows
 * (statement-rows.ts) goes through `unsafe`, with its text and its parameters apart, so
 * the span has the text and never a value. The statement runs when awaited (or asked for
 * its `values()`), which is when the span starts.
 */
export function withStatementSpans(sql: Sql, spans: StatementSpans): Sql {
  return new Proxy(sql, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (property === 'unsafe') {
        return (...args: Parameters<Sql['unsafe']>) =>
          spanned(value.apply(target, args), args[0], spans)
      }
      if (property === 'begin' || property === 'savepoint') {
        return (...args: [...string[], Callback]) => {
          const callback = args.at(-1) as Callback
          const options = args.slice(0, -1) as string[]
          return value.apply(target, [
            ...options,
            (transaction: Sql) => callback(withStatementSpans(transaction, spans)),
          ])
        }
      }
      return value
    },
  })
}

/** What drizzle does with a query: await it, or await its `values()`. */
function spanned(pending: ReturnType<Sql['unsafe']>, text: string, spans: StatementSpans) {
  return {
    values: () => measured(() => pending.values(), text, spans),
    // biome-ignore lint/suspicious/noThenProperty: drizzle awaits the query itself.
    then: <A, B>(onFulfilled?: (rows: unknown) => A, onRejected?: (reason: unknown) => B) =>
      measured(() => pending, text, spans).then(onFulfilled, onRejected),
  }
}

/** PGlite, or one of its transactions: what drizzle calls on it. */
type PgliteQueries = {
  query(text: string, ...rest: unknown[]): Promise<unknown>
  transaction?(callback: (transaction: PgliteQueries) => unknown): Promise<unknown>
}

/** PGlite with a span around every `query`, in transactions too, as postgres.js above. */
export function withPgliteStatementSpans<Client extends PgliteQueries>(
  client: Client,
  spans: StatementSpans,
): Client {
  return new Proxy(client, {
    get(target, property) {
      if (property === 'query') {
        return (text: string, ...rest: unknown[]) =>
          measured(() => target.query(text, ...rest), text, spans)
      }
      if (property === 'transaction' && target.transaction) {
        return (callback: (transaction: PgliteQueries) => unknown) =>
          target.transaction?.((transaction) =>
            callback(withPgliteStatementSpans(transaction, spans)),
          )
      }
      const value = Reflect.get(target, property, target)
      // PGlite's methods use private fields, which only the instance itself can reach.
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

async function measured<T>(run: () => PromiseLike<T>, text: string, spans: StatementSpans) {
  const end = spans.startStatement(text)
  if (!end) return run()
  try {
    const result = await run()
    end()
    return result
  } catch (error) {
    end(error)
    throw error
  }
}
