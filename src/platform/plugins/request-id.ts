import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** A client's x-request-id is honoured when it is a UUID; anything else is replaced. */
export function requestIdFrom(request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && UUID.test(given) ? given : randomUUID()
}

async function requestIdPlugin(app: FastifyInstance) {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    done()
  })
}

export const requestIdHeader = fp(requestIdPlugin, { name: 'request-id' })
