import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

declare module 'fastify' {
  interface FastifyInstance {
    /** The methods routed for a path, for 405 answers; empty for an unknown path. */
    allowedMethods(pathname: string): string[]
  }
}

/** Records every route as it is added, so a known path with a wrong method can say which fit. */
async function methodNotAllowedPlugin(app: FastifyInstance) {
  const routes: { pattern: RegExp; methods: string[] }[] = []
  app.addHook('onRoute', (route) => {
    routes.push({ pattern: patternOf(route.url), methods: [route.method].flat() })
  })
  app.decorate('allowedMethods', (pathname: string) => {
    const methods = routes
      .filter((route) => route.pattern.test(pathname))
      .flatMap((route) => route.methods)
    return [...new Set(methods)].sort()
  })
}

/** `/products/:id` → /^\/products\/[^/]+$/; `/docs/*` → /^\/docs\/.*$/ */
function patternOf(url: string): RegExp {
  const segments = url.split('/').map((segment) => {
    if (segment.startsWith(':')) return '[^/]+'
    if (segment === '*') return '.*'
    return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  })
  return new RegExp(`^${segments.join('/')}$`)
}

export const methodNotAllowed = fp(methodNotAllowedPlugin, { name: 'method-not-allowed' })
