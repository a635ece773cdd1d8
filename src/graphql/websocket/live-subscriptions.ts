import { LIMITS, limitError } from '../limits.js'

export const TOO_MANY_SUBSCRIPTIONS = 'TOO_MANY_SUBSCRIPTIONS'

/**
 * The live subscriptions of one WebSocket, whichever subprotocol carries them, counted
 * where they really start and end: the event streams.
 */
export function createLiveSubscriptions(max = LIMITS.subscriptionsPerSocket) {
  const live = new Set<AsyncIterator<unknown>>()
  let starting = 0

  return {
    /** Starts a stream, or refuses it while the socket holds `max`. */
    async open<Event>(start: () => Promise<AsyncIterator<Event>>): Promise<AsyncIterator<Event>> {
      if (live.size + starting >= max) {
        throw limitError(
          `This socket already runs ${max} subscriptions; complete one before starting another`,
          TOO_MANY_SUBSCRIPTIONS,
        )
      }
      starting += 1
      let stream: AsyncIterator<Event>
      try {
        stream = await start()
      } finally {
        starting -= 1
      }
      live.add(stream)
      return counted(stream, () => live.delete(stream))
    },

    /** Ends every stream of the closed socket, whatever state its operations were in. */
    closeAll() {
      for (const stream of live) void stream.return?.()
      live.clear()
    },
  }
}

export type LiveSubscriptions = ReturnType<typeof createLiveSubscriptions>

/** The stream, calling `ended` when it finishes or its consumer lets it go (again is harmless). */
function counted<Event>(
  stream: AsyncIterator<Event>,
  ended: () => void,
): AsyncIterableIterator<Event> {
  const settle = (step: Promise<IteratorResult<Event>>) =>
    step.then(
      (result) => {
        if (result.done) ended()
        return result
      },
      (error) => {
        ended()
        throw error
      },
    )
  const iterator: AsyncIterableIterator<Event> = {
    next: () => settle(stream.next()),
    return: (value) => {
      ended()
      return stream.return ? stream.return(value) : Promise.resolve({ value, done: true })
    },
    throw: (error) => {
      ended()
      return stream.throw ? stream.throw(error) : Promise.reject(error)
    },
    [Symbol.asyncIterator]: () => iterator,
  }
  return iterator
}
