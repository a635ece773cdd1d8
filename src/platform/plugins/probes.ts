/**
 * Liveness, readiness and the metrics scrape: never rate-limited, never in maintenance,
 * never counted.
 */
export const PROBE_PATHS: ReadonlySet<string> = new Set(['/health', '/ready', '/metrics'])

export const isProbe = (url: string) => PROBE_PATHS.has(url.split('?')[0] ?? '')
