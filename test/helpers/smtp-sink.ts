import type { AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'

interface Received {
  to: string[]
  raw: string
}

/** A real SMTP server in this process: it keeps what it accepts, and refuses on demand. */
export async function smtpSink() {
  const received: Received[] = []
  const refusals = new Map<string, { code: number; times: number }>()
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(address, _session, callback) {
      const refusal = refusals.get(address.address)
      if (refusal && refusal.times > 0) {
        refusal.times -= 1
        const error = Object.assign(new Error(`Mailbox ${address.address} refused`), {
          responseCode: refusal.code,
        })
        return callback(error)
      }
      callback()
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (chunk: Buffer) => chunks.push(chunk))
      stream.on('end', () => {
        const to = session.envelope.rcptTo.map((recipient) => recipient.address)
        received.push({ to, raw: Buffer.concat(chunks).toString('utf8') })
        callback()
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.server.address() as AddressInfo
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    /** The next `times` deliveries to `address` are refused with `code`. */
    refuse: (address: string, code: number, times = Number.POSITIVE_INFINITY) =>
      refusals.set(address, { code, times }),
    deliveredTo: (address: string) => received.filter((mail) => mail.to.includes(address)),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

export type SmtpSink = Awaited<ReturnType<typeof smtpSink>>
