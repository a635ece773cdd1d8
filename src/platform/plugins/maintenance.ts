import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { unavailable } from '../errors.js'
import { isProbe } from './probes.js'

const RETRY_AFTER_SECONDS = 60

/** MAINTENANCE_MODE: every request but the probes answers 503 with Retry-After. */
async function maintenancePlugin(app: FastifyInstance) {
  app.addHook('onRequest', async (request, reply) => {
    if (isProbe(request.url)) return
    reply.header('retry-after', RETRY_AFTER_SECONDS)
    throw unavailable('The service is down for maintenance')
  })
}

export const maintenance = fp(maintenancePlugin, { name: 'maintenance' })
