import { hash } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'

/**
 * A strong validator: the same bytes give the same tag on every instance. SHA-1 in one
 * call: a fingerprint, not a signature, and the cheapest Node offers for it.
 */
const tagOf = (payload: string | Buffer) => `"${hash('sha1', payload, 'base64url')}"`

function matches(request: FastifyRequest, tag: string): boolean {
  const header = request.headers['if-none-match']
  if (!header) return false
  // If-None-Match compares weakly (RFC 9110 §13.1.2): W/"x" matches "x".
  return header
    .split(',')
    .map((each) => each.trim().replace(/^W\//, ''))
    .some((each) => each === '*' || each === tag)
}

/** Successful GETs carry an ETag; a request that already holds it gets 304 and no body. */
async function etagPlugin(app: FastifyInstance) {
  app.addHook('onSend', async (request, reply, payload) => {
    const cacheable = request.method === 'GET' || request.method === 'HEAD'
    if (!cacheable || reply.statusCode !== 200) return payload
    if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload
    const tag = tagOf(payload)
    reply.header('etag', tag)
    if (!matches(request, tag)) return payload
    reply.code(304)
    return ''
  })
}

export const etag = fp(etagPlugin, { name: 'etag' })
