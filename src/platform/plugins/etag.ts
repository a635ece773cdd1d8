import { hash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'

/**
 * A strong validator: the same bytes give the same tag on every instance. SHA-1 in one
 * call: a fingerprint, not a signature, and the cheapest Node offers for it.
 */
export const tagOf = (payload: string | Buffer) => `"${hash('sha1', payload, 'base64url')}"`

/** Whether an If-None-Match header holds `tag`, compared weakly (RFC 9110 §13.1.2). */
export function holdsTag(header: string | undefined, tag: string): boolean {
  return (
    header
      ?.split(',')
      .map((each) => each.trim().replace(/^W\//, ''))
      .some((each) => each === '*' || each === tag) ?? false
  )
}

/** Each entity tag of a list, weak ones with their `W/`: a tag may hold a comma. */
const ENTITY_TAGS = /(?:W\/)?"[^"]*"/g

/**
 * Whether an If-Match header holds for a resource whose current tag is `tag`: `*`, or a
 * list that names it, compared strongly (RFC 9110 §13.1.1), so a weak tag never matches.
 * Its form is openapi.yaml's to check.
 */
export function ifMatchHolds(header: string, tag: string): boolean {
  if (header.trim() === '*') return true
  return Array.from(header.matchAll(ENTITY_TAGS), ([each]) => each).includes(tag)
}

declare module 'fastify' {
  interface FastifyReply {
    /** What the ETag stands for, when it is not the body sent (a v2 envelope's timestamp). */
    taggedBody: string | undefined
    /**
     * Set by a write whose 200 answers the resource as its GET would: the answer is
     * tagged as that GET is, so the client can send the tag back in its next If-Match.
     */
    representsResource: boolean
  }
}

const isRead = (request: FastifyRequest) => request.method === 'GET' || request.method === 'HEAD'

/** Whether an answer carries an ETag: a successful read, or a write that answers the resource. */
export const isTagged = (request: FastifyRequest, reply: FastifyReply) =>
  reply.statusCode === 200 && (isRead(request) || reply.representsResource)

/** Successful GETs carry an ETag; a request that already holds it gets 304 and no body. */
async function etagPlugin(app: FastifyInstance) {
  app.decorateReply('taggedBody', undefined)
  app.decorateReply('representsResource', false)
  app.addHook('onSend', (request, reply, payload, done) => {
    done(null, withEtag(request, reply, payload))
  })
}

export const etag = fp(etagPlugin, { name: 'etag' })

function withEtag(request: FastifyRequest, reply: FastifyReply, payload: unknown): unknown {
  if (!isTagged(request, reply)) return payload
  if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload
  const tag = tagOf(reply.taggedBody ?? payload)
  reply.header('etag', tag)
  if (!isRead(request) || !holdsTag(request.headers['if-none-match'], tag)) return payload
  reply.code(304)
  return ''
}
