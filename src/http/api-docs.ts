import { dirname } from 'node:path'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import { openapiPath, openapiV2Path } from '../paths.js'

/** Each version's description, as Swagger UI and as JSON and YAML (`<prefix>/json`). */
const DESCRIPTIONS = [
  { routePrefix: '/docs', path: openapiPath },
  { routePrefix: '/docs/v2', path: openapiV2Path },
]

/** Swagger UI for each version of the REST API, each in a context of its own. */
export async function apiDocs(app: FastifyInstance) {
  for (const { routePrefix, path } of DESCRIPTIONS) {
    await app.register(async (docs) => {
      await docs.register(swagger, {
        mode: 'static',
        specification: { path, baseDir: dirname(path) },
      })
      await docs.register(swaggerUi, { routePrefix })
    })
  }
}
