import type { ServiceHandlers } from '../../http/operations.js'
import type { PaymentsService } from './payments-service.js'

export function createPaymentHandlers(payments: PaymentsService) {
  return {
    async receivePaymentWebhook(request) {
      const { id, type, data } = request.body
      const receipt = await payments.receive(request.headers['x-webhook-id'], {
        id,
        type,
        data: { orderId: data.orderId },
      })
      return { data: receipt }
    },
  } satisfies Partial<ServiceHandlers>
}
