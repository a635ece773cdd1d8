import fc from 'fast-check'
import { expect } from 'vitest'
import type { ApiResponse } from '../api.js'
import type { FuzzRequest, Inputs } from './rest-requests.js'
import type { World } from './world.js'

/**
 * Stand in an If-Match for the ETag its resource has when the request is sent, and for
 * that tag made weak: swapped for them then (see currentTags), so an expectation knows
 * which the request held. Tags its schema gives are never current.
 */
export const CURRENT_ETAG = '"current-etag-of-the-resource"'
export const WEAK_CURRENT_ETAG = 'W/"current-etag-of-the-resource"'

/** If-Match values worth sending beside those of its schema (mostly `*` or stale). */
export const ifMatchHints = fc.constantFrom(CURRENT_ETAG, WEAK_CURRENT_ETAG, '*', '"stale"')

/**
 * The request's headers with a stand-in swapped for the tag a GET of its path gives an
 * admin now; kept when there is none (a resource never made, or deleted: 404 and 410
 * come before If-Match).
 */
export async function currentTags(world: World, request: FuzzRequest) {
  const { headers } = request
  const ifMatch = headers['If-Match']
  if (ifMatch !== CURRENT_ETAG && ifMatch !== WEAK_CURRENT_ETAG) return headers
  const path = request.url.split('?')[0] ?? request.url
  const read = await world.server.api.get(path, { token: world.tokens.admin })
  const tag = read.status === 200 ? read.headers.get('etag') : null
  if (!tag) return headers
  return { ...headers, 'If-Match': ifMatch === CURRENT_ETAG ? tag : `W/${tag}` }
}

/**
 * Whether a write's If-Match lets it through: none, `*`, or the tag its resource had as
 * it was sent (CURRENT_ETAG). Any other names no current version (a weak tag never
 * matches), and the answer must be 412.
 */
export function ifMatchHolds({ response, inputs }: { response: ApiResponse; inputs: Inputs }) {
  const ifMatch = inputs.header['If-Match']
  if (ifMatch === undefined || ifMatch === CURRENT_ETAG || String(ifMatch).trim() === '*') {
    return true
  }
  expect(response.status, `If-Match ${ifMatch} let a write through`).toBe(412)
  return false
}
