import { tcpRelay } from './tcp-relay.js'

/** Real Redis for the multi-instance suites: set in CI, where those suites are mandatory. */
export const redisUrl = process.env.TEST_REDIS_URL
if (process.env.CI === 'true' && !redisUrl) {
  throw new Error('CI runs the Redis suites: set TEST_REDIS_URL')
}

/** A relay to Redis that a test can cut, stall and restore (see tcpRelay). */
export const redisRelay = tcpRelay
