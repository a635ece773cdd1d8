import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { RecentWrites } from '../infrastructure/recent-writes.js'

/** Set on a request whose operation writes (a GraphQL mutation): see markWrite. */
const WRITES = Symbol('writes')
type MarkedRequest = FastifyRequest & { [WRITES]?: true }

/** Tells the plugin that `request`, on one of its `operationPaths`, runs a write. */
export const markWrite = (request: FastifyRequest) => {
  ;(request as MarkedRequest)[WRITES] = true
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS'])

export interface ReadYourWritesOptions {
  recentWrites: RecentWrites
  /** Paths whose requests write only when marked (GraphQL over HTTP: its mutations). */
  operationPaths: readonly string[]
}

/**
 * Records the caller of every request that may have written, as its answer goes out
 * (after the commit, before the client can send its next request): any method but GET,
 * HEAD and OPTIONS, unless refused with a 4xx, which changes nothing; on an operation
 * path, only what was marked.
 */
async function readYourWritesPlugin(app: FastifyInstance, options: ReadYourWritesOptions) {
  const operationPaths = new Set(options.operationPaths)
  const wrote = (request: FastifyRequest, statusCode: number) => {
    if ((request as MarkedRequest)[WRITES]) return true
    if (READS.has(request.method) || operationPaths.has(request.routeOptions.url ?? '')) {
      return false
    }
    return statusCode < 400 || statusCode >= 500
  }
  app.addHook('onSend', (request, reply, payload, done) => {
    if (wrote(request, reply.statusCode)) options.recentWrites.recordRequest(request)
    done(null, payload)
  })
}

export const readYourWrites = fp(readYourWritesPlugin, { name: 'read-your-writes' })
