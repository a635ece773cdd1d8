import { hash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'

/**
 * A strong validator: the same bytes give the same tag on every instance. SHA-1 in one
 * call: a fingerprint, not a signature, and the cheapest Node offers for it.
 */
const tagOf = (payload: string | Buffer) => `"${hash('sha1', payload, 'base64url')}"`

/** Whether an If-None-Match header holds `tag`, compared weakly (RFC 9110 §13.1.2). */
export function holdsTag(header: string | undefined, tag: string): boolean {
  return (
    header
      ?.split(',')
      .map((each) => each.trim().replace(/^W\//, ''))
      .some((each) => each === '*' || each === tag) ?? false
  )
}

declare module 'fastify' {
  interface FastifyReply {
    /** What the ETag stands for, when it is not the body sent (a v2 envelope's timestamp). */
    taggedBody: string | undefined
  }
}

/** Successful GETs carry an ETag; a request that already holds it gets 304 and no body. */
async function etagPlugin(app: FastifyInstance) {
  app.decorateReply('taggedBody', undefined)
  app.addHook('onSend', (request, reply, payload, done) => {
    done(null, withEtag(request, reply, payload))
  })
}

export const etag = fp(etagPlugin, { name: 'etag' })

function withEtag(request: FastifyRequest, reply: FastifyReply, payload: unknown): unknown {
  const cacheable = request.method === 'GET' || request.method === 'HEAD'
  if (!cacheable || reply.statusCode !== 200) return payload
  if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload
  const tag = tagOf(reply.taggedBody ?? payload)
  reply.header('etag', tag)
  if (!holdsTag(request.headers['if-none-match'], tag)) return payload
  reply.code(304)
  return ''
}
