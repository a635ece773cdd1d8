import type { ServiceHandlers } from '../../http/operations.js'
import type { EmailsService } from './emails-service.js'

export function createEmailHandlers(emails: EmailsService) {
  return {
    async sendEmail(request, reply) {
      const email = await emails.queue(request.body)
      reply.code(202).header('location', `/emails/${email.id}`)
      return { data: email }
    },

    async getEmail(request) {
      return { data: await emails.get(request.params.id) }
    },
  } satisfies Partial<ServiceHandlers>
}
