import { execFile } from 'node:child_process'
import { mkdtemp, readFile, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { extname, join } from 'node:path'
import { promisify } from 'node:util'
import { CriticalityLevel, diff } from '@graphql-inspector/core'
import { buildSchema } from 'graphql'

/**
 * Breaking-change report between two versions of the contract.
 *
 *   schema-diff <base> <revision>   two files of one kind (.graphql, or .yaml/.yml/.json OpenAPI)
 *   schema-diff --git <ref>         schema.graphql and openapi.yaml at <ref> against the working tree
 *
 * Prints every change on a line, grouped by severity; exits 1 when one is breaking.
 */

export type Severity = 'breaking' | 'dangerous' | 'safe'
export interface Change {
  spec: 'graphql' | 'openapi'
  severity: Severity
  message: string
}

const run = promisify(execFile)
const redocly = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js')

const GRAPHQL_SEVERITY: Record<string, Severity> = {
  [CriticalityLevel.Breaking]: 'breaking',
  [CriticalityLevel.Dangerous]: 'dangerous',
  [CriticalityLevel.NonBreaking]: 'safe',
}

export async function diffGraphql(base: string, revision: string): Promise<Change[]> {
  const changes = await diff(buildSchema(base), buildSchema(revision))
  return changes.map((change) => ({
    spec: 'graphql',
    severity: GRAPHQL_SEVERITY[change.criticality.level] ?? 'breaking',
    message: change.message,
  }))
}

type Impact = 'major' | 'minor' | 'patch'
interface RedoclyReport {
  changes: {
    path: string
    kind: string
    property?: string
    impact: Impact
    verdicts: { impact: Impact; message: string }[]
  }[]
}

/**
 * A value added to an enum a response carries: a client that switches over every value
 * it knew meets one it does not, as graphql-inspector rates an added GraphQL enum value
 * (dangerous). Redocly rates it major; what a request takes gaining a value stays safe.
 * Redocly names the property the enum is of, but not an array's items (`Enum gained`).
 */
const widensResponseEnum = (message: string, path: string) =>
  /^Enum (of .* )?gained values/.test(message) && path.includes('/responses/')

function openapiChange(impact: Impact, message: string, path: string): Change {
  const severity = widensResponseEnum(message, path)
    ? 'dangerous'
    : impact === 'major'
      ? 'breaking'
      : 'safe'
  return {
    spec: 'openapi',
    severity,
    message: `${message.replaceAll('`', "'")} (${decodeURIComponent(path)})`,
  }
}

/** Redocly rates each change by the semver bump it needs: major is breaking. */
export async function diffOpenapi(baseFile: string, revisionFile: string): Promise<Change[]> {
  const { stdout } = await run(
    process.execPath,
    [
      redocly,
      'diff',
      baseFile,
      revisionFile,
      '--format=json',
      '--fail-on=none',
      '--lint-config=off',
    ],
    { maxBuffer: 64 * 1024 * 1024 },
  )
  const report = JSON.parse(stdout.slice(stdout.indexOf('{'))) as RedoclyReport
  return report.changes.flatMap((change) =>
    change.verdicts.length > 0
      ? change.verdicts.map((verdict) =>
          openapiChange(verdict.impact, verdict.message, change.path),
        )
      : // Redocly names a change without a rule only by what and where.
        [
          openapiChange(
            change.impact,
            `${change.kind} ${change.property ?? ''}`.trim(),
            change.path,
          ),
        ],
  )
}

export function report(changes: Change[]): string {
  const order: Severity[] = ['breaking', 'dangerous', 'safe']
  const lines = order.flatMap((severity) => {
    const group = changes.filter((change) => change.severity === severity)
    if (group.length === 0) return []
    return [
      `${severity.toUpperCase()} (${group.length})`,
      ...group.map((change) => `  [${change.spec}] ${change.message}`),
    ]
  })
  return lines.length > 0 ? lines.join('\n') : 'No changes.'
}

async function diffFiles(baseFile: string, revisionFile: string): Promise<Change[]> {
  if (extname(baseFile) === '.graphql') {
    return diffGraphql(await readFile(baseFile, 'utf8'), await readFile(revisionFile, 'utf8'))
  }
  return diffOpenapi(baseFile, revisionFile)
}

/** Both specs as they were at a git ref, against the working tree. */
async function diffAgainstGit(ref: string): Promise<Change[]> {
  const directory = await mkdtemp(join(tmpdir(), 'schema-diff-'))
  const changes: Change[] = []
  for (const file of ['schema.graphql', 'openapi.yaml']) {
    const { stdout } = await run('git', ['show', `${ref}:${file}`], { maxBuffer: 64 * 1024 * 1024 })
    const baseFile = join(directory, file)
    await writeFile(baseFile, stdout)
    changes.push(...(await diffFiles(baseFile, file)))
  }
  return changes
}

async function main(argv: string[]): Promise<number> {
  const [first, second] = argv
  if (!first || !second) {
    console.error('usage: schema-diff <base> <revision> | schema-diff --git <ref>')
    return 2
  }
  const changes = first === '--git' ? await diffAgainstGit(second) : await diffFiles(first, second)
  console.log(report(changes))
  return changes.some((change) => change.severity === 'breaking') ? 1 : 0
}

process.exitCode = await main(process.argv.slice(2))
