import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

export interface RegisteredRoute {
  method: string
  /** Fastify's form: `/products/:id`. */
  url: string
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The methods routed for a path, for 405 answers; empty for an unknown path. */
    allowedMethods(pathname: string): string[]
    /** Every route the server has registered, for the check against openapi.yaml. */
    registeredRoutes(): RegisteredRoute[]
  }
}

const CATCH_ALL = '*'

/**
 * Records every route as it is added: what 405 answers and the route drift check read.
 * The catch-all (`*`, CORS's preflights) is no path's method: with it every path would
 * seem to exist, and an unknown one would answer 405 instead of 404.
 */
async function routeTablePlugin(app: FastifyInstance) {
  const routes: (RegisteredRoute & { pattern: RegExp })[] = []
  app.addHook('onRoute', (route) => {
    if (route.url === CATCH_ALL) return
    for (const method of [route.method].flat()) {
      routes.push({ method, url: route.url, pattern: patternOf(route.url) })
    }
  })
  app.decorate('allowedMethods', (pathname: string) => {
    const methods = routes
      .filter((route) => route.pattern.test(pathname))
      .map((route) => route.method)
    return [...new Set(methods)].sort()
  })
  app.decorate('registeredRoutes', () => routes.map(({ method, url }) => ({ method, url })))
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

export const routeTable = fp(routeTablePlugin, { name: 'route-table' })
