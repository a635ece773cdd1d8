import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Files outside src/ that the server reads at run time. This module runs from src/ (tsx,
 * tests) and from dist/src/ (the build), so the project root is the nearest directory
 * above it that holds package.json, not a fixed number of `../`.
 */
function findProjectRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`)
  }
}

export const projectRoot = findProjectRoot(dirname(fileURLToPath(import.meta.url)))
export const openapiPath = join(projectRoot, 'openapi.yaml')
/** Version 2 of the REST API, generated from openapi.yaml by tools/openapi-v2.ts. */
export const openapiV2Path = join(projectRoot, 'generated/openapi.v2.yaml')
export const graphqlSchemaPath = join(projectRoot, 'schema.graphql')
export const migrationsPath = join(projectRoot, 'drizzle')
