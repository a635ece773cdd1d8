import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { buildSchema, parse, validate } from 'graphql'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)
const fixture = (name: string) => `test/fixtures/schema-diff/${name}`

/** The command a consumer's CI runs: its output and exit code. */
async function schemaDiff(base: string, revision: string) {
  try {
    const { stdout } = await run(process.execPath, [
      'bin/schema-diff.mjs',
      fixture(base),
      fixture(revision),
    ])
    return { code: 0, output: stdout }
  } catch (error) {
    const failed = error as { code: number; stdout: string }
    return { code: failed.code, output: failed.stdout }
  }
}

describe('schema-diff', () => {
  it.each([
    ['removed-field.graphql', "Field 'author' was removed from object type 'Message'"],
    ['type-change.graphql', "Field 'Message.text' changed type from 'String!' to 'Int!'"],
    ['required-argument.graphql', "Argument 'since: String!' added to field 'Query.messages'"],
  ])('fails on the breaking GraphQL change in %s', async (revision, message) => {
    const { code, output } = await schemaDiff('base.graphql', revision)
    expect(code).toBe(1)
    expect(output).toMatch(/^BREAKING \(1\)$/m)
    expect(output).toContain(`[graphql] ${message}`)
  })

  it('passes an additive GraphQL change, marking a new optional argument dangerous', async () => {
    const { code, output } = await schemaDiff('base.graphql', 'additive.graphql')
    expect(code).toBe(0)
    expect(output).not.toContain('BREAKING')
    expect(output).toContain(
      "DANGEROUS (1)\n  [graphql] Argument 'limit: Int' added to field 'Query.messages'",
    )
    expect(output).toContain(
      "SAFE (1)\n  [graphql] Field 'editedAt' was added to object type 'Message'",
    )
  })

  it.each([
    ['removed-path.yaml', "Path '/items/{id}' was removed."],
    ['removed-response-property.yaml', "Property 'colour' of 'Item' was removed."],
    ['required-request-field.yaml', "Properties became required: 'colour'."],
    ['narrowed-enum.yaml', "Enum of 'colour' lost values: 'blue'."],
    ['narrowed-bound.yaml', "'maxLength' of 'name' changed from '100' to '50'."],
  ])('fails on the breaking OpenAPI change in %s', async (revision, message) => {
    const { code, output } = await schemaDiff('base.yaml', revision)
    expect(code).toBe(1)
    expect(output).toMatch(/^BREAKING \(1\)$/m)
    expect(output).toContain(`[openapi] ${message}`)
  })

  it('passes an additive OpenAPI change', async () => {
    const { code, output } = await schemaDiff('base.yaml', 'additive.yaml')
    expect(code).toBe(0)
    expect(output).toMatch(/^SAFE \(2\)$/m)
    expect(output).not.toContain('BREAKING')
  })

  it.each([
    ['widened-response-enum.yaml', "Enum of 'status' gained values: 'returned'"],
    ['widened-response-items-enum.yaml', "Enum gained values: 'heavy'"],
  ])(
    'marks a value added to an enum of a response dangerous, not breaking: %s',
    async (revision, message) => {
      const { code, output } = await schemaDiff('base-status.yaml', revision)
      expect(code).toBe(0)
      expect(output).toContain(`DANGEROUS (1)\n  [openapi] ${message}`)
    },
  )

  it('reports no changes between identical specs', async () => {
    expect(await schemaDiff('base.yaml', 'base.yaml')).toEqual({ code: 0, output: 'No changes.\n' })
  })
})

/**
 * The specs as released before users, posts, presence and metrics (test/fixtures/released),
 * and the documents the client SDK suite had been built on then: the current specs only
 * add to them, and those documents still run.
 */
describe('the specs evolve without breaking their clients', () => {
  it.each([
    ['schema.graphql', 'released/schema.graphql'],
    ['openapi.yaml', 'released/openapi.yaml'],
  ])('%s: only additions since the release', async (current, released) => {
    const { output } = await schemaDiff(`../${released}`, `../../../${current}`)
    const breaking = /^BREAKING \(\d+\)\n((?: {2}.*\n)*)/m.exec(output)?.[1] ?? ''
    expect(breaking.split('\n').filter((line) => line.trim() !== '')).toEqual([])
  })

  it('the SDK documents released earlier still validate against schema.graphql', () => {
    const schema = buildSchema(readFileSync('schema.graphql', 'utf8'))
    const documents = parse(readFileSync('test/fixtures/sdk-documents/released.graphql', 'utf8'))
    expect(documents.definitions).toHaveLength(3)
    expect(validate(schema, documents).map((error) => error.message)).toEqual([])
  })
})
