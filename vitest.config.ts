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
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // The slow-consumer suite measures the heap after a forced collection.
    execArgv: ['--expose-gc'],
  },
})
