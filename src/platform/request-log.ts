import { type FastifyReply, type FastifyRequest, LogController } from 'fastify'

/**
 * One line per request, when it is answered, instead of Fastify's two (one on arrival,
 * one on completion): the same facts, the method and path included, at half the cost.
 */
export class RequestLog extends LogController {
  override incomingRequest() {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply) {
    const line = {
      req: request,
      res: reply,
      responseTime: reply.elapsedTime,
    }
    if (error) reply.log.error({ ...line, err: error }, 'request errored')
    else reply.log.info(line, 'request completed')
  }
}
