import fc from 'fast-check'

/**
 * How much the fuzz suites try. CI runs a few cases per property with a fixed seed, so
 * a run is short and the same every time; `make fuzz` runs many with a new seed, which
 * it prints. FUZZ_SEED replays a run, FUZZ_RUNS sets its size.
 */
export const FUZZ = {
  runs: positiveInteger(process.env.FUZZ_RUNS, 'FUZZ_RUNS') ?? 20,
  seed: integer(process.env.FUZZ_SEED, 'FUZZ_SEED') ?? 20_251_122,
}

/** Room for a property's runs, shrinking included, on a busy machine. */
export const PROPERTY_TIMEOUT_MS = 60_000 + FUZZ.runs * 3_000
/**
 * Where fast-check stops a property, short of the test's timeout: shrinking a failure
 * found in long text can take minutes, and the counterexample shrunk so far is still
 * printed. A run cut short without a failure fails too, so a slow machine cannot pass
 * with fewer cases than asked for.
 */
const PROPERTY_TIME_LIMIT_MS = PROPERTY_TIMEOUT_MS - 10_000

function integer(text: string | undefined, name: string): number | undefined {
  if (text === undefined || text === '') return undefined
  if (!/^-?\d+$/.test(text)) throw new Error(`${name} must be an integer, got ${text}`)
  return Number(text)
}

function positiveInteger(text: string | undefined, name: string): number | undefined {
  const value = integer(text, name)
  if (value !== undefined && value < 1) throw new Error(`${name} must be at least 1`)
  return value
}

/** Each property its own stream of cases, all of them fixed by FUZZ_SEED. */
function seedOf(name: string): number {
  let hash = FUZZ.seed | 0
  for (const character of name) hash = Math.imul(hash ^ character.charCodeAt(0), 16_777_619)
  return hash | 0
}

/**
 * Runs an async property under the suite's seed and size. A failure names the
 * property and how to replay the run, above fast-check's report of the shrunk
 * counterexample and the error it gave.
 */
export async function fuzz<T>(
  name: string,
  arbitrary: fc.Arbitrary<T>,
  predicate: (value: T) => Promise<void>,
): Promise<void> {
  try {
    await fc.assert(fc.asyncProperty(arbitrary, predicate), {
      numRuns: FUZZ.runs,
      seed: seedOf(name),
      interruptAfterTimeLimit: PROPERTY_TIME_LIMIT_MS,
      markInterruptAsFailure: true,
    })
  } catch (error) {
    const replay = `FUZZ_SEED=${FUZZ.seed} FUZZ_RUNS=${FUZZ.runs} replays this run`
    if (error instanceof Error) error.message = `${name} (${replay})\n${error.message}`
    throw error
  }
}
