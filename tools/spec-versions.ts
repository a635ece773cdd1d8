// The versions of the two specs, which the SDK packages take (tools/build-sdk.ts).
import { readFile } from 'node:fs/promises'
import { parse } from 'yaml'
import { graphqlSchemaPath, openapiPath } from '../src/paths.js'

/** openapi.yaml's `info.version`. */
export async function openapiVersion() {
  const document = parse(await readFile(openapiPath, 'utf8')) as { info: { version: string } }
  return document.info.version
}

/** schema.graphql's version: its first line, `# version: <semver>`. */
export async function graphqlVersion() {
  const schema = await readFile(graphqlSchemaPath, 'utf8')
  const version = /^# version: (\d+\.\d+\.\d+\S*)\n/.exec(schema)?.[1]
  if (!version) throw new Error(`${graphqlSchemaPath} must start with "# version: <semver>"`)
  return version
}
