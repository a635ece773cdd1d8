// The REST client of the catalog and chat service: openapi-fetch typed by the paths that
// openapi-typescript generates from openapi.yaml (version 1) and from its version 2
// description. `./generated/` is written by tools/build-sdk.ts when the package is built.
import createClient, { type Client, type ClientOptions, type Middleware } from 'openapi-fetch'
import type { paths } from './generated/openapi.js'
import type { paths as pathsV2 } from './generated/openapi.v2.js'

export type { Client, FetchResponse, Middleware } from 'openapi-fetch'
export type { components, operations, paths } from './generated/openapi.js'
export type {
  components as componentsV2,
  operations as operationsV2,
  paths as pathsV2,
} from './generated/openapi.v2.js'
export { specVersion } from './generated/version.js'

/** A bearer token, or how to get the current one (read before every request). */
export type TokenSource = string | (() => string | undefined | Promise<string | undefined>)

export interface RestClientOptions extends Omit<ClientOptions, 'baseUrl'> {
  /** Where the service answers, e.g. `https://api.example.com` (no `/api/v2`). */
  baseUrl: string
  /** Sent as `Authorization: Bearer <token>` unless a request sets its own. */
  token?: TokenSource
  /** The API version every request names in its `api-version` header: 1 (default) or 2. */
  apiVersion?: 1 | 2
}

export type RestClient = Client<paths>
export type RestClientV2 = Client<pathsV2>

/** A client of version 1, or of version 2 with `apiVersion: 2`, typed by that version. */
export function createRestClient(options: RestClientOptions & { apiVersion?: 1 }): RestClient
export function createRestClient(options: RestClientOptions & { apiVersion: 2 }): RestClientV2
export function createRestClient({ token, apiVersion = 1, ...options }: RestClientOptions) {
  const client = createClient<paths | pathsV2>(options)
  client.use(versionHeader(apiVersion))
  if (token !== undefined) client.use(bearer(token))
  return client
}

const versionHeader = (version: 1 | 2): Middleware => ({
  onRequest({ request }) {
    request.headers.set('api-version', String(version))
    return request
  },
})

const bearer = (token: TokenSource): Middleware => ({
  async onRequest({ request }) {
    if (request.headers.has('authorization')) return request
    const current = typeof token === 'function' ? await token() : token
    if (current) request.headers.set('authorization', `Bearer ${current}`)
    return request
  },
})
