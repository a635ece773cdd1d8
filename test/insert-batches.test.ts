import { describe, expect, it } from 'vitest'
import { batchedInserts } from '../src/db/insert-batches.js'

/** A statement that records each batch it was given and answers a row per input. */
function recordingInsert(
  fails?: (inputs: readonly string[]) => Error | undefined,
  options?: Parameters<typeof batchedInserts>[1],
) {
  const batches: string[][] = []
  const insertAll = async (inputs: readonly string[]) => {
    batches.push([...inputs])
    await new Promise(setImmediate)
    const failure = fails?.(inputs)
    if (failure) throw failure
    return inputs.map((input) => ({ stored: input }))
  }
  return { batches, insert: batchedInserts(insertAll, options) }
}

/** What Postgres answers a row that breaks a check constraint (SQLSTATE 23514). */
const checkViolation = () =>
  Object.assign(new Error('violates check constraint'), { code: '23514' })

describe('batched inserts', () => {
  it('writes the inserts asked for in one turn in one statement, each answered its own row', async () => {
    const { batches, insert } = recordingInsert()
    const rows = await Promise.all(['a', 'b', 'c'].map(insert))
    expect(rows).toEqual([{ stored: 'a' }, { stored: 'b' }, { stored: 'c' }])
    expect(batches).toEqual([['a', 'b', 'c']])
  })

  it('writes an insert of a later turn in a statement of its own', async () => {
    const { batches, insert } = recordingInsert()
    const first = insert('a')
    await new Promise(setImmediate)
    const second = insert('b')
    expect(await Promise.all([first, second])).toEqual([{ stored: 'a' }, { stored: 'b' }])
    expect(batches).toEqual([['a'], ['b']])
  })

  it('writes at most a hundred rows a statement', async () => {
    const { batches, insert } = recordingInsert()
    const inputs = Array.from({ length: 250 }, (_, index) => `row ${index}`)
    const rows = await Promise.all(inputs.map(insert))
    expect(rows.map(({ stored }) => stored)).toEqual(inputs)
    expect(batches.map((batch) => batch.length)).toEqual([100, 100, 50])
  })

  it('fails only the insert whose values the database refused, the rest written alone', async () => {
    const { batches, insert } = recordingInsert((inputs) =>
      inputs.includes('bad') ? checkViolation() : undefined,
    )
    const outcomes = await Promise.allSettled(['a', 'bad', 'c'].map(insert))
    expect(outcomes).toEqual([
      { status: 'fulfilled', value: { stored: 'a' } },
      { status: 'rejected', reason: expect.objectContaining({ code: '23514' }) },
      { status: 'fulfilled', value: { stored: 'c' } },
    ])
    expect(batches).toEqual([['a', 'bad', 'c'], ['a'], ['bad'], ['c']])
  })

  it('fails every insert of the batch, once, when the database is away', async () => {
    const away = Object.assign(new Error('connection closed'), { code: 'CONNECTION_CLOSED' })
    const { batches, insert } = recordingInsert(() => away)
    const outcomes = await Promise.allSettled(['a', 'b'].map(insert))
    expect(outcomes).toEqual([
      { status: 'rejected', reason: away },
      { status: 'rejected', reason: away },
    ])
    expect(batches).toEqual([['a', 'b']])
  })

  it('one at a time: writes the next batch once the one before is written, with all that came meanwhile', async () => {
    const batches: string[][] = []
    let release: () => void = () => {}
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    const insert = batchedInserts(
      async (inputs: readonly string[]) => {
        batches.push([...inputs])
        if (inputs.includes('a')) await released
        return [...inputs]
      },
      { oneAtATime: true },
    )
    const first = insert('a')
    await new Promise(setImmediate)
    // Asked for over two turns while `a` is being written: they wait, and go out together.
    const meanwhile = [insert('b'), insert('c')]
    await new Promise(setImmediate)
    meanwhile.push(insert('d'))
    await new Promise(setImmediate)
    expect(batches).toEqual([['a']])
    release()
    expect(await Promise.all([first, ...meanwhile])).toEqual(['a', 'b', 'c', 'd'])
    expect(batches).toEqual([['a'], ['b', 'c', 'd']])
  })

  it('one at a time: writes a hundred rows a statement, one statement after the other', async () => {
    let writing = 0
    let most = 0
    const insert = batchedInserts(
      async (inputs: readonly number[]) => {
        writing += 1
        most = Math.max(most, writing)
        await new Promise(setImmediate)
        writing -= 1
        return [...inputs]
      },
      { oneAtATime: true },
    )
    const rows = await Promise.all(Array.from({ length: 250 }, (_, index) => insert(index)))
    expect(rows).toEqual(Array.from({ length: 250 }, (_, index) => index))
    expect(most).toBe(1)
  })

  it('fails every insert when the statement answers another number of rows than it was given', async () => {
    const insert = batchedInserts(async (inputs: readonly string[]) => inputs.slice(1))
    const outcomes = await Promise.allSettled(['a', 'b'].map(insert))
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected'])
    expect((outcomes[0] as PromiseRejectedResult).reason.message).toBe(
      '2 rows inserted, 1 returned',
    )
  })
})
