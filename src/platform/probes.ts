/** Liveness and readiness: never rate-limited, never in maintenance, never counted. */
export const PROBE_PATHS: ReadonlySet<string> = new Set(['/health', '/ready'])

export const isProbe = (url: string) => PROBE_PATHS.has(url.split('?')[0] ?? '')
