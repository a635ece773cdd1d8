/**
 * Holds this process's event loop, as a long collection or a synchronous task does: no
 * timer runs and no socket is read meanwhile. Held from an immediate, after a turn's
 * reads, as a request's handler would hold it, so the next turn runs its timers before it
 * reads what arrived.
 */
export async function holdTheLoop(ms: number): Promise<void> {
  await new Promise(setImmediate)
  const until = performance.now() + ms
  while (performance.now() < until) {
    // Busy: that is the point.
  }
}
