import type { ServiceHandlers } from '../../http/operations.js'
import { principalOf } from '../../http/security.js'
import type { AuthService } from './auth-service.js'

/** Token pairs are credentials: no browser or proxy cache may keep them. */
export const NO_STORE = 'no-store'

export function createAuthHandlers(auth: AuthService) {
  return {
    async login(request, reply) {
      const { email, password, otp } = request.body
      const pair = await auth.login(email, password, otp)
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
