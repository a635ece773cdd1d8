import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  resolve: {
    // graphql ships CommonJS (main) and ESM (module) builds; Node and Mercurius load
    // the CommonJS one, Vite would pick the ESM one, and two copies of graphql refuse
    // each other's schemas and errors. Load the one Node loads.
    alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Vitest's default is one worker per core but one; the suites wait on sockets, timers
    // and the databases as much as they compute, so at least three files in flight (on
    // two cores: 844 s → 577 s for the whole suite).
    maxWorkers: Math.max(3, availableParallelism() - 1),
    // Many tests start a server of their own, on a fresh embedded database migrated from
    // scratch: on a loaded two-core machine that alone has taken 30 s. They get a hook's time.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // The slow-consumer suite measures the heap after a forced collection.
    execArgv: ['--expose-gc'],
  },
})
