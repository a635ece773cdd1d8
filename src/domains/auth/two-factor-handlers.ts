import type { ServiceHandlers } from '../../http/operations.js'
import { principalOf } from '../../http/security.js'
import { NO_STORE } from './auth-handlers.js'
import type { TwoFactorService } from './two-factor-service.js'

export function createTwoFactorHandlers(twoFactor: TwoFactorService) {
  return {
    async setupTwoFactor(request, reply) {
      const setup = await twoFactor.setup(principalOf(request).userId)
      reply.header('cache-control', NO_STORE)
      return { data: setup }
    },

    async enableTwoFactor(request, reply) {
      const codes = await twoFactor.enable(principalOf(request).userId, request.body.code)
      reply.header('cache-control', NO_STORE)
      return { data: codes }
    },

    async disableTwoFactor(request, reply) {
      await twoFactor.disable(principalOf(request).userId, request.body.code)
      return reply.code(204).send()
    },
  } satisfies Partial<ServiceHandlers>
}
