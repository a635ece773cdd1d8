import { assertMatchesSpec } from './contract.js'

export interface ApiResponse<Body = any> {
  status: number
  headers: Headers
  body: Body
  text: string
}

export interface RequestOptions {
  /** Sent as JSON. */
  json?: unknown
  /** Sent as is, with the given headers (for malformed bodies). */
  raw?: string
  token?: string
  headers?: Record<string, string>
}

/**
 * A plain HTTP client for the black-box suites. Every response it receives is checked
 * against openapi.yaml, so a test cannot pass on an answer the spec does not promise.
 */
export function createApi(baseUrl: string) {
  async function request<Body = any>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<ApiResponse<Body>> {
    const headers: Record<string, string> = { ...options.headers }
    if (options.token) headers.authorization = `Bearer ${options.token}`
    let body: string | undefined = options.raw
    if (options.json !== undefined) {
      headers['content-type'] ??= 'application/json'
      body = JSON.stringify(options.json)
    }
    const url = `${baseUrl}${path}`
    const response = await fetch(url, { method, headers, body })
    const text = await response.text()
    const contentType = response.headers.get('content-type')
    const parsed = contentType?.startsWith('application/json') && text ? JSON.parse(text) : text
    const apiVersion = response.headers.get('api-version')
    assertMatchesSpec(method, url, {
      status: response.status,
      contentType,
      body: parsed,
      text,
      apiVersion,
    })
    return { status: response.status, headers: response.headers, body: parsed as Body, text }
  }

  return {
    request,
    get: <Body = any>(path: string, options?: RequestOptions) =>
      request<Body>('GET', path, options),
    post: <Body = any>(path: string, options?: RequestOptions) =>
      request<Body>('POST', path, options),
    put: <Body = any>(path: string, options?: RequestOptions) =>
      request<Body>('PUT', path, options),
    patch: <Body = any>(path: string, options?: RequestOptions) =>
      request<Body>('PATCH', path, options),
    delete: <Body = any>(path: string, options?: RequestOptions) =>
      request<Body>('DELETE', path, options),
  }
}

export type Api = ReturnType<typeof createApi>
