import { execFile } from 'node:child_process'
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { buildSchema, Kind, parse } from 'graphql'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { graphqlSchemaPath, projectRoot } from '../src/paths.js'
import { graphqlVersion, openapiVersion } from '../tools/spec-versions.js'
import { backends } from './helpers/backends.js'
import { ADMIN, startServer, type TestServer } from './helpers/server.js'

const run = promisify(execFile)
const tsc = join(projectRoot, 'node_modules/.bin/tsc')
const programs = join(projectRoot, 'test/sdk/packages')
/**
 * An empty project's settings, as a client team's might be (@types/node from ours). Both
 * programs in one compile: tsc still emits program.js when misuse.ts fails, and the test
 * asserts that every error is one of misuse.ts's marked lines.
 */
const tsconfig = {
  compilerOptions: {
    strict: true,
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    lib: ['ES2023', 'DOM'],
    types: ['node'],
    typeRoots: [join(projectRoot, 'node_modules/@types')],
    // As `tsc --init` sets it: the packages' declarations come out of a strict compile.
    skipLibCheck: true,
    outDir: 'out',
  },
  files: ['program.ts', 'misuse.ts'],
}
/** Node 20 has a global WebSocket only behind a flag; later versions have it anyway. */
const nodeFlags = typeof globalThis.WebSocket === 'undefined' ? ['--experimental-websocket'] : []

/** `make sdk` into a directory of ours, then `npm install` of both tarballs into an empty project. */
async function installPackages(work: string) {
  const built = await run(
    process.execPath,
    ['--import', 'tsx', 'tools/build-sdk.ts', join(work, 'tarballs')],
    { cwd: projectRoot },
  )
  const tarballs = built.stdout.trim().split('\n')
  const project = join(work, 'project')
  await mkdir(project)
  const npm = (...args: string[]) => run('npm', args, { cwd: project })
  await npm('init', '-y')
  await npm('pkg', 'set', 'type=module')
  await npm('install', '--prefer-offline', '--no-audit', '--no-fund', ...tarballs)
  await writeFile(join(project, 'tsconfig.json'), JSON.stringify(tsconfig))
  for (const program of ['program.ts', 'misuse.ts']) {
    await copyFile(join(programs, program), join(project, program))
  }
  return { tarballs, project }
}

/** `file.ts:line` of each error of `tsc --strict` over the project. */
async function compileErrors(project: string) {
  const compiled = await run(tsc, ['-p', '.', '--strict'], { cwd: project }).catch(
    (error: { stdout: string }) => error,
  )
  return [...compiled.stdout.matchAll(/^(\S+\.ts)\((\d+),\d+\): error/gm)].map(
    ([, file, line]) => `${file}:${line}`,
  )
}

const installed = (project: string, name: string) => {
  const root = join(project, 'node_modules/@catalog-chat', name)
  return {
    manifest: async () =>
      JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as Record<string, unknown>,
    files: async (folder = '.') => (await readdir(join(root, folder))).sort(),
  }
}

describe('the SDK packages, installed from their tarballs into an empty project', () => {
  let work: string
  let tarballs: string[]
  let project: string
  let errors: string[]

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'sdk-packages-'))
    ;({ tarballs, project } = await installPackages(work))
    errors = await compileErrors(project)
  }, 180_000)
  afterAll(() => rm(work, { recursive: true, force: true }))

  it('are named and versioned after their specs, and hold the client only', async () => {
    const [rest, graphql] = [openapiVersion(), graphqlVersion()]
    expect(tarballs.map((path) => path.split('/').at(-1))).toEqual([
      `catalog-chat-rest-client-${await rest}.tgz`,
      `catalog-chat-graphql-client-${await graphql}.tgz`,
    ])
    const restClient = installed(project, 'rest-client')
    const graphqlClient = installed(project, 'graphql-client')
    expect(await restClient.manifest()).toMatchObject({
      version: await rest,
      dependencies: { 'openapi-fetch': expect.any(String) },
    })
    expect(await graphqlClient.manifest()).toMatchObject({
      version: await graphql,
      dependencies: { 'graphql-ws': expect.any(String) },
      peerDependencies: { graphql: expect.any(String) },
    })
    expect(await restClient.files()).toEqual([
      'README.md',
      'dist',
      'openapi.v2.yaml',
      'openapi.yaml',
      'package.json',
    ])
    expect(await restClient.files('dist')).toEqual(['generated', 'index.d.ts', 'index.js'])
    expect(await graphqlClient.files()).toEqual([
      'README.md',
      'dist',
      'operations.graphql',
      'package.json',
      'schema.graphql',
    ])
    expect(await graphqlClient.files('dist')).toEqual([
      'client.d.ts',
      'client.js',
      'generated',
      'index.d.ts',
      'index.js',
    ])
  })

  it('compile under tsc --strict, refusing exactly the marked lines of a misuse', async () => {
    const misuse = await readFile(join(programs, 'misuse.ts'), 'utf8')
    const marked = misuse
      .split('\n')
      .flatMap((line, index) => (line.includes('// refused') ? [`misuse.ts:${index + 1}`] : []))
    expect(marked).toHaveLength(6)
    expect(new Set(errors)).toEqual(new Set(marked))
  })

  it('ship a typed document for every root field of schema.graphql', async () => {
    const schema = buildSchema(await readFile(graphqlSchemaPath, 'utf8'))
    const roots = [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]
    const fields = roots.flatMap((root) => Object.keys(root?.getFields() ?? {}))
    const operations = parse(
      await readFile(join(projectRoot, 'sdk/graphql/operations.graphql'), 'utf8'),
    )
    const selected = operations.definitions.flatMap((definition) =>
      definition.kind === Kind.OPERATION_DEFINITION
        ? definition.selectionSet.selections.flatMap((selection) =>
            selection.kind === Kind.FIELD ? [selection.name.value] : [],
          )
        : [],
    )
    expect(new Set(selected)).toEqual(new Set(fields))
  })

  describe.each(backends)('a program compiled against them, on $name', (backend) => {
    let server: TestServer

    beforeAll(async () => {
      server = await startServer(backend)
    })
    afterAll(() => server?.close())

    it('drives the running server over REST, GraphQL and graphql-ws', async () => {
      const ran = await run(
        process.execPath,
        [...nodeFlags, 'out/program.js', server.baseUrl, ADMIN.email, ADMIN.password],
        { cwd: project },
      )
      expect(JSON.parse(ran.stdout)).toEqual({
        rest: {
          version: await openapiVersion(),
          signedUp: true,
          listed: true,
          created: 201,
          etag: expect.stringMatching(/^"[^"]+"$/),
          readName: 'Packaged lamp',
          v2AnsweredBy: '2',
          v2RequestId: true,
        },
        graphql: {
          version: await graphqlVersion(),
          me: true,
          liveText: expect.stringMatching(/^packaged hello \d+$/),
          liveWasSent: true,
          listed: true,
          refusedCode: 'NOT_FOUND',
        },
      })
    }, 60_000)
  })
})
