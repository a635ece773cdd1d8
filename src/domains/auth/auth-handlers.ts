import type { ServiceHandlers } from '../../http/operations.js'
import { principalOf } from '../../http/security.js'
import type { AuthService } from './auth-service.js'

export function createAuthHandlers(auth: AuthService) {
  return {
    async login(request) {
      return { data: await auth.login(request.body.email, request.body.password) }
    },

    async refreshTokens(request) {
      return { data: await auth.refresh(request.body.refreshToken) }
    },

    async logout(request, reply) {
      await auth.logout(principalOf(request), request.body.refreshToken)
      return reply.code(204).send()
    },
  } satisfies Partial<ServiceHandlers>
}
