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

/** Records every route as it is added: what 405 answers and the route drift check read. */
async function routeTablePlugin(app: FastifyInstance) {
  const routes: (RegisteredRoute & { pattern: RegExp })[] = []
  app.addHook('onRoute', (route) => {
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
