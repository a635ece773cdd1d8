import type { Sql } from 'postgres'

/** A statement (or a transaction's end) that got no answer in time: the database is away. */
export class DatabaseDeadlineError extends Error {
  override name = 'DatabaseDeadlineError'
  readonly code = 'DATABASE_DEADLINE'

  constructor(deadlineMs: number) {
    super(`The database did not answer within ${deadlineMs} ms`)
  }
}

type Callback = (sql: Sql) => unknown

/**
 * The client drizzle runs on over TLS, with a deadline on every statement. The server's
 * statement_timeout ends statements that run long, but a database that has gone silent
 * (a hung host, a network that drops packets) answers nothing at all, and without a
 * deadline of its own the request would wait for it forever. Without TLS, the watch on
 * each connection does this at less cost (see silence-watch.ts).
 */
export function withDeadlines(sql: Sql, deadlineMs: number): Sql {
  return new Proxy(sql, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (property === 'unsafe') {
        return (...args: Parameters<Sql['unsafe']>) =>
          deadlined(value.apply(target, args), deadlineMs)
      }
      if (property === 'begin' || property === 'savepoint') {
        return (...args: [...string[], Callback]) =>
          transactionWithDeadline((...given) => value.apply(target, given), args, deadlineMs)
      }
      return value
    },
  })
}

/** What drizzle does with a query: await it, or await its `values()`. */
function deadlined(pending: ReturnType<Sql['unsafe']>, deadlineMs: number) {
  return {
    values: () => beforeDeadline(pending.values(), deadlineMs),
    // biome-ignore lint/suspicious/noThenProperty: drizzle awaits the query itself.
    then: <A, B>(onFulfilled?: (rows: unknown) => A, onRejected?: (reason: unknown) => B) =>
      beforeDeadline(pending, deadlineMs).then(onFulfilled, onRejected),
  }
}

/**
 * The statements of a transaction have deadlines of their own; these bound what
 * postgres.js sends itself, BEGIN and then COMMIT or ROLLBACK, which a silent database
 * would otherwise leave pending.
 */
function transactionWithDeadline(
  begin: (...args: [...string[], Callback]) => Promise<unknown>,
  args: [...string[], Callback],
  deadlineMs: number,
) {
  const callback = args.at(-1) as Callback
  let started: () => void = () => {}
  let ended: () => void = () => {}
  const callbackStarted = new Promise<void>((resolve) => {
    started = resolve
  })
  const callbackEnded = new Promise<void>((resolve) => {
    ended = resolve
  })
  const transaction = begin(...(args.slice(0, -1) as string[]), async (sql: Sql) => {
    started()
    try {
      return await callback(withDeadlines(sql, deadlineMs))
    } finally {
      ended()
    }
  })
  const bounds = beforeDeadline(callbackStarted, deadlineMs)
    .then(() => callbackEnded)
    .then(() => beforeDeadline(transaction, deadlineMs))
  return Promise.race([transaction, bounds])
}

function beforeDeadline<T>(work: PromiseLike<T>, deadlineMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    // Judged after the turn's reads, as silence-watch.ts judges: after a pause of this
    // process the answer may be in, unread, and then the work wins the race.
    const expire = () => reject(new DatabaseDeadlineError(deadlineMs))
    timer = setTimeout(() => setImmediate(expire), deadlineMs)
  })
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer))
}
