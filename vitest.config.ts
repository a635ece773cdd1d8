import { readdirSync, readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

const testDirectory = new URL('test/', import.meta.url)
/** Files that replace a module (vi.mock): each needs a set of modules of its own. */
const replacingModules = readdirSync(testDirectory, { recursive: true, encoding: 'utf8' })
  .filter((path) => path.endsWith('.test.ts'))
  .filter((path) => readFileSync(new URL(path, testDirectory), 'utf8').includes('vi.mock('))
  .map((path) => `test/${path}`)

export default defineConfig({
  resolve: {
    // graphql ships CommonJS (main) and ESM (module) builds; Node and Mercurius load
    // the CommonJS one, Vite would pick the ESM one, and two copies of graphql refuse
    // each other's schemas and errors. Load the one Node loads.
    alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }],
  },
  test: {
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
    // A worker loads the service's modules once for all the files it runs, not once per
    // file: on two cores a run went from 314 s to 212 s on Node 20, 267 s to 184 s on
    // Node 24. Each file still starts servers and databases of its own.
    projects: [
      {
        extends: true,
        test: {
          name: 'shared-modules',
          include: ['test/**/*.test.ts'],
          exclude: replacingModules,
          isolate: false,
        },
      },
      { extends: true, test: { name: 'own-modules', include: replacingModules } },
    ],
  },
})
