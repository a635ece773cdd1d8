import type { ServiceHandlers } from '../../http/operations.js'
import { principalOf } from '../../http/security.js'
import type { CredentialsService } from './credentials-service.js'

/** The same answer whether an account has the address or not. */
const ACCEPTED = { data: { status: 'accepted' as const } }

export function createCredentialsHandlers(credentials: CredentialsService) {
  return {
    async changePassword(request, reply) {
      const { currentPassword, newPassword } = request.body
      const pair = await credentials.changePassword(
        principalOf(request),
        currentPassword,
        newPassword,
      )
      // A token pair is a credential: no browser or proxy cache may keep it, as at login.
      reply.header('cache-control', 'no-store')
      return { data: pair }
    },

    async requestPasswordReset(request, reply) {
      await credentials.requestPasswordReset(request.body.email)
      reply.code(202)
      return ACCEPTED
    },

    async confirmPasswordReset(request, reply) {
      await credentials.confirmPasswordReset(request.body.token, request.body.newPassword)
      return reply.code(204).send()
    },

    async verifyEmail(request, reply) {
      await credentials.verifyEmail(request.body.token)
      return reply.code(204).send()
    },

    async logoutAll(request, reply) {
      await credentials.logoutAll(principalOf(request))
      return reply.code(204).send()
    },
  } satisfies Partial<ServiceHandlers>
}
