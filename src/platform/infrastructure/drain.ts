import { setTimeout as sleep } from 'node:timers/promises'

/**
 * An instance leaving its load balancer's pool before it closes: while it drains, `/ready`
 * fails, so the balancer's health check takes it out, and everything else is served as
 * before, kept-alive connections and WebSockets included. Only then does the server close:
 * by that time the balancer sends it nothing new, so closing fails no request
 * (docs/decisions/load-balancer.md).
 */
export function createDrain() {
  let draining = false
  return {
    draining: () => draining,
    /** Starts draining, and resolves once `ms` have passed. */
    async drainFor(ms: number) {
      draining = true
      await sleep(ms)
    },
  }
}

export type Drain = ReturnType<typeof createDrain>
