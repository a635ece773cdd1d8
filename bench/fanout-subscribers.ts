import { subscribers } from './fanout.js'

/**
 * A share of `make fanout`'s subscribers in a process of its own (a process may hold only
 * so many sockets), driven by bench/fanout-instances.ts over IPC: `subscribe` with the
 * share's addresses and chat, then `hearing` as often as asked, `latencies`, `close`.
 */
export type WorkerRequest =
  | { type: 'subscribe'; urls: string[]; chatId: string }
  | { type: 'hearing' | 'latencies' | 'close' }

let group: Awaited<ReturnType<typeof subscribers>> | undefined

process.on('message', async (request: WorkerRequest) => {
  const reply = (value: unknown) => process.send?.(value)
  if (request.type === 'subscribe') {
    group = await subscribers(request.urls, request.chatId)
    reply('subscribed')
  } else if (request.type === 'hearing') reply(group?.hearing())
  else if (request.type === 'latencies') reply(group?.latencies())
  else {
    await group?.close()
    reply('closed')
    process.disconnect()
  }
})
