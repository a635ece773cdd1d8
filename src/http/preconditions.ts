import type { FastifyRequest } from 'fastify'
import { preconditionFailed } from '../platform/errors.js'
import { ifMatchHolds, tagOf } from '../platform/plugins/etag.js'

/**
 * A check of a resource as it is, made by the write it guards under the row's lock, so
 * no other write comes between the check and its own. It throws to leave the row as is.
 */
export type Precondition<Resource> = (current: Resource) => void

/**
 * The request's If-Match as a check of the resource it writes; undefined without one.
 * `represent` gives the resource as its GET's v1 body has it, whose tag the GET sends
 * in both versions (version-routing.ts). That body is written by the route's
 * serializer; JSON.stringify writes the same text for a value holding exactly the
 * schema's properties, in the schema's order, as the representations here do
 * (test/preconditions.test.ts compares the tags on every such resource).
 */
export function ifMatchOf<Resource>(
  request: FastifyRequest,
  represent: (current: Resource) => { data: unknown },
): Precondition<Resource> | undefined {
  const header = request.headers['if-match']
  if (header === undefined) return undefined
  return (current) => {
    if (ifMatchHolds(header, tagOf(JSON.stringify(represent(current))))) return
    throw preconditionFailed(
      header.includes('W/')
        ? 'If-Match compares tags strongly, so a weak one (W/"…") never matches: send the ETag as GET gives it'
        : 'The resource has changed since the ETag in If-Match: GET it again for its current ETag',
    )
  }
}
