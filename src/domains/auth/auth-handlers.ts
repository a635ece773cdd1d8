import type { ServiceHandlers } from '../../http/operations.js'
import { principalOf } from '../../http/security.js'
import type { AuthService } from './auth-service.js'

/** Token pairs are credentials: no browser or proxy cache may keep them. */
const NO_STORE = 'no-store'

export function createAuthHandlers(auth: AuthService) {
  return {
    async login(request, reply) {
      const pair = await auth.login(request.body.email, request.body.password)
      reply.header('cache-control', NO_STORE)
      return { data: pair }
    },

    async refreshTokens(request, reply) {
      const pair = await auth.refresh(request.body.refreshToken)
      reply.header('cache-control', NO_STORE)
      return { data: pair }
    },

    async logout(request, reply) {
      await auth.logout(principalOf(request), request.body.refreshToken)
      return reply.code(204).send()
    },
  } satisfies Partial<ServiceHandlers>
}
