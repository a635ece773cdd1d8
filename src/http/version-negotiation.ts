import type { IncomingMessage } from 'node:http'
import { badRequest, notAcceptable } from '../platform/errors.js'

/**
 * The versions of the REST API. A version is a property of the envelope only: every
 * operation has one handler, and v2 wraps its answer as `{ data, meta }`.
 */
export const API_VERSIONS = [1, 2] as const
export type ApiVersion = (typeof API_VERSIONS)[number]
export const DEFAULT_API_VERSION: ApiVersion = 1
/** v1 is deprecated since the day v2 was published (RFC 9745's `Deprecation` date). */
export const V1_DEPRECATED_AT = new Date('2026-11-22T00:00:00Z')

const isApiVersion = (value: number): value is ApiVersion =>
  (API_VERSIONS as readonly number[]).includes(value)

declare module 'node:http' {
  interface IncomingMessage {
    /** The version a `/api/vN` prefix named (a number, or the unknown label as sent). */
    versionInPath?: ApiVersion | string
  }
}

const PREFIX = /^\/api\/(v[^/?#]*)(?=[/?#]|$)/

/**
 * `/api/v2/products?page=2` as the version it names (a number, or the unknown label as
 * sent) and the path it names in it (`/products?page=2`); undefined without a prefix.
 */
export function splitVersionPrefix(url: string) {
  const match = PREFIX.exec(url)
  if (!match) return undefined
  const label = match[1] as string
  const number = /^v[1-9][0-9]{0,2}$/.test(label) ? Number(label.slice(1)) : Number.NaN
  const rest = url.slice(match[0].length)
  return {
    version: isApiVersion(number) ? number : label,
    rest: rest.startsWith('/') ? rest : `/${rest}`,
  }
}

/** The path under which a request named its version, to prefix the paths it is answered. */
export const pathPrefixOf = (request: IncomingMessage) =>
  typeof request.versionInPath === 'number' ? `/api/v${request.versionInPath}` : ''

const VENDOR_TYPE = /^application\/vnd\.catalog\.v([0-9]+)\+json$/i

interface VersionSignals {
  path?: ApiVersion | string | undefined
  header?: string | string[] | undefined
  accept?: string | undefined
  contentType?: string | undefined
}

/**
 * The version a request asks for, from its path prefix, its `api-version` header, the
 * vendor media type it accepts and the one its body is sent as: all that are given must
 * agree. An unknown version is a 400, except in `Accept`, where it is a 406 unless the
 * client also accepts plain JSON.
 */
export function negotiateVersion(signals: VersionSignals): ApiVersion {
  const named: [string, ApiVersion][] = []
  if (signals.path !== undefined) named.push(['the path', known(signals.path, 'the path')])
  if (signals.header !== undefined) {
    named.push(['api-version', known(headerVersion(signals.header), 'api-version')])
  }
  // Most clients accept plain JSON or anything: no vendor type, nothing to parse.
  const { accept } = signals
  const accepted = accept && mayNameVendorType(accept) ? acceptedVersion(accept) : undefined
  if (accepted !== undefined) named.push(['Accept', accepted])
  const sentAs = vendorVersionOf(signals.contentType)
  if (sentAs !== undefined) named.push(['Content-Type', known(sentAs, 'Content-Type')])

  const [first] = named
  if (!first) return DEFAULT_API_VERSION
  const other = named.find(([, version]) => version !== first[1])
  if (other) {
    throw badRequest(
      `The request names two API versions: ${first[1]} in ${first[0]}, ${other[1]} in ${other[0]}`,
    )
  }
  return first[1]
}

const mayNameVendorType = (header: string) => /vnd\./i.test(header)

function known(version: number | string, where: string): ApiVersion {
  if (typeof version === 'number' && isApiVersion(version)) return version
  throw badRequest(
    `Unknown API version ${JSON.stringify(String(version))} in ${where}; this server speaks ${API_VERSIONS.join(' and ')}`,
  )
}

const headerVersion = (header: string | string[]) => {
  const value = Array.isArray(header) ? header.join(', ') : header.trim()
  return /^[0-9]{1,3}$/.test(value) ? Number(value) : value
}

/** The version of a vendor media type (`application/vnd.catalog.v2+json`), if it is one. */
export function vendorVersionOf(mediaType: string | undefined): number | undefined {
  // Most requests send plain JSON: no vendor type, nothing to parse.
  if (!mediaType || !mayNameVendorType(mediaType)) return undefined
  const match = VENDOR_TYPE.exec(mediaType.split(';', 1)[0]?.trim() ?? '')
  return match ? Number(match[1]) : undefined
}

/**
 * The best known version among the vendor types of an Accept header (highest q, then the
 * newest), or none when it names none. Naming only unknown ones is a 406, unless plain
 * JSON is acceptable too.
 */
function acceptedVersion(accept: string): ApiVersion | undefined {
  let best: { version: ApiVersion; q: number } | undefined
  let unknownNamed = false
  let jsonAcceptable = false
  for (const range of accept.split(',')) {
    const [type = '', ...parameters] = range.split(';').map((part) => part.trim())
    const q = qualityOf(parameters)
    if (q === 0) continue
    const version = vendorVersionOf(type)
    if (version === undefined) {
      jsonAcceptable ||= /^(application\/(json|\*)|\*\/\*)$/i.test(type)
    } else if (!isApiVersion(version)) {
      unknownNamed = true
    } else if (!best || q > best.q || (q === best.q && version > best.version)) {
      best = { version, q }
    }
  }
  if (!best && unknownNamed && !jsonAcceptable) {
    throw notAcceptable(
      `Accept names no API version this server speaks (${API_VERSIONS.map((v) => `application/vnd.catalog.v${v}+json`).join(', ')})`,
    )
  }
  return best?.version
}

function qualityOf(parameters: string[]): number {
  const q = parameters.find((parameter) => /^q=/i.test(parameter))
  if (!q) return 1
  const value = Number(q.slice(2))
  return Number.isFinite(value) ? value : 1
}
