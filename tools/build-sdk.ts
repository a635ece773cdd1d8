// `make sdk`: the client packages of sdk/ built from the specs, compiled, and packed with
// `npm pack` into a directory (dist/sdk/ by default): `node --import tsx tools/build-sdk.ts
// [dir]`. Each package is staged in .cache/, where the project's node_modules resolves its
// dependencies for the compile, so parallel builds (a test's and `make sdk`) never share files.
import { execFile } from 'node:child_process'
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { basename, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { generate as graphqlCodegen } from '@graphql-codegen/cli'
import { graphqlSchemaPath, openapiPath, openapiV2Path, projectRoot } from '../src/paths.js'
import { graphqlVersion, openapiVersion } from './spec-versions.js'

const run = promisify(execFile)
const bin = (name: string) => join(projectRoot, 'node_modules/.bin', name)

interface SdkPackage {
  /** Its folder under sdk/. */
  folder: 'rest' | 'graphql'
  version(): Promise<string>
  /** The specs shipped beside dist/, for teams that generate code of their own. */
  specs: string[]
  /** Writes the package's src/generated/ from the specs. */
  generate(packageDir: string, generatedDir: string): Promise<void>
}

const openapiTypes = (spec: string, output: string) =>
  run(bin('openapi-typescript'), [spec, '--output', output, '--silent'])

const rest: SdkPackage = {
  folder: 'rest',
  version: openapiVersion,
  specs: [openapiPath, openapiV2Path],
  async generate(_packageDir, generatedDir) {
    await Promise.all([
      openapiTypes(openapiPath, join(generatedDir, 'openapi.ts')),
      openapiTypes(openapiV2Path, join(generatedDir, 'openapi.v2.ts')),
    ])
  },
}

const graphql: SdkPackage = {
  folder: 'graphql',
  version: graphqlVersion,
  specs: [graphqlSchemaPath],
  async generate(packageDir, generatedDir) {
    const clientPreset = {
      preset: 'client' as const,
      presetConfig: { fragmentMasking: false },
      // ESM: relative imports carry their .js extension.
      config: { useTypeImports: true, enumsAsTypes: true, emitLegacyCommonJSImports: false },
    }
    await graphqlCodegen(
      {
        schema: graphqlSchemaPath,
        documents: join(packageDir, 'operations.graphql'),
        generates: { [`${generatedDir}/`]: clientPreset },
        silent: true,
      },
      true,
    )
  },
}

/** Stages, generates, compiles and packs one package; the tarball's path. */
async function buildPackage(sdk: SdkPackage, staging: string, outDir: string) {
  const packageDir = join(staging, sdk.folder)
  const generatedDir = join(packageDir, 'src/generated')
  const version = await sdk.version()
  await cp(join(projectRoot, 'sdk', sdk.folder), packageDir, { recursive: true })
  await mkdir(generatedDir, { recursive: true })
  await sdk.generate(packageDir, generatedDir)
  await writeFile(
    join(generatedDir, 'version.ts'),
    `/** The version of the spec this package was built from. */\nexport const specVersion = '${version}'\n`,
  )
  for (const spec of sdk.specs) await cp(spec, join(packageDir, basename(spec)))
  const tsconfig = {
    extends: join(projectRoot, 'sdk/tsconfig.json'),
    compilerOptions: { rootDir: 'src', outDir: 'dist' },
    include: ['src'],
  }
  await writeFile(join(packageDir, 'tsconfig.json'), JSON.stringify(tsconfig))
  await run(bin('tsc'), ['-p', packageDir])
  const { name, ...manifest } = JSON.parse(await readFile(join(packageDir, 'package.json'), 'utf8'))
  await writeFile(
    join(packageDir, 'package.json'),
    `${JSON.stringify({ name, version, ...manifest }, null, 2)}\n`,
  )
  const packed = await run('npm', ['pack', '--json', '--pack-destination', outDir], {
    cwd: packageDir,
  })
  const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }]
  return join(outDir, filename)
}

/** Both packages packed into `outDir`: the paths of their tarballs. */
async function buildSdk(outDir: string) {
  await mkdir(outDir, { recursive: true })
  await mkdir(join(projectRoot, '.cache'), { recursive: true })
  const staging = await mkdtemp(join(projectRoot, '.cache', 'sdk-build-'))
  try {
    const [restTarball, graphqlTarball] = await Promise.all(
      [rest, graphql].map((sdk) => buildPackage(sdk, staging, outDir)),
    )
    return { rest: restTarball as string, graphql: graphqlTarball as string }
  } finally {
    await rm(staging, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const outDir = resolve(process.argv[2] ?? join(projectRoot, 'dist/sdk'))
  const tarballs = await buildSdk(outDir)
  for (const tarball of Object.values(tarballs)) console.log(tarball)
}
