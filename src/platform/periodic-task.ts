/**
 * Housekeeping a module runs once when the server starts and then every `everyMs` until
 * it stops (as its DomainModule `start` and `stop`). The task reports its own failures:
 * one missed round waits for the next.
 */
export function periodicTask(task: () => Promise<void>, everyMs: number) {
  let timer: NodeJS.Timeout | undefined
  return {
    async start(): Promise<void> {
      timer = setInterval(task, everyMs)
      timer.unref()
      await task()
    },
    async stop(): Promise<void> {
      clearInterval(timer)
    },
  }
}
