import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { AppError, badRequest } from '../errors.js'

/**
 * Headers a request may carry. Browsers send about twenty; Node's parser takes up to
 * 2000 within its 16 KiB, and past that it drops the rest without a word.
 */
export const MAX_REQUEST_HEADERS = 200

const tooManyHeaders = new AppError(
  'BAD_REQUEST',
  431,
  `A request may carry at most ${MAX_REQUEST_HEADERS} headers`,
)
const twoHosts = badRequest('The request names its Host more than once')

/**
 * What Node's parser lets through but a request must not have: more headers than any
 * client needs, and a second `Host`, which Node drops while a proxy in front may have
 * routed by it (RFC 9112 §3.2: a server answers 400). Headers too large in bytes never
 * get this far: http-parse-errors.ts answers them 431.
 */
async function headerRulesPlugin(app: FastifyInstance) {
  app.addHook('onRequest', (request, _reply, done) => {
    const raw = request.raw.rawHeaders
    if (raw.length > MAX_REQUEST_HEADERS * 2) return done(tooManyHeaders)
    done(hostsIn(raw) > 1 ? twoHosts : undefined)
  })
}

/** How many `Host` headers the name/value list holds. */
function hostsIn(rawHeaders: readonly string[]): number {
  let hosts = 0
  for (let index = 0; index < rawHeaders.length; index += 2) {
    const name = rawHeaders[index] as string
    if (name.length === 4 && name.toLowerCase() === 'host') hosts++
  }
  return hosts
}

export const headerRules = fp(headerRulesPlugin, { name: 'header-rules' })
