import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/**
 * While the server closes, what arrives on connections already open is still served
 * (the database and the bus stay up until the server has closed), and every answer then
 * says `Connection: close`, so keep-alive clients go to another instance and the server
 * can finish instead of waiting on idle sockets.
 */
async function gracefulClosePlugin(app: FastifyInstance) {
  let closing = false
  app.addHook('preClose', async () => {
    closing = true
  })
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })
}

export const gracefulClose = fp(gracefulClosePlugin, { name: 'graceful-close' })
