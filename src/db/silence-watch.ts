import { Socket } from 'node:net'

/** A message's type (one byte), then its length (four), which counts itself. */
const HEADER_BYTES = 5
const byte = (letter: string) => letter.charCodeAt(0)

/**
 * What the client asks, and so what the server owes: a Query or Sync is owed a
 * ReadyForQuery; a Flush, which postgres.js sends after describing a statement it has not
 * prepared on this connection yet, is owed the end of that description (RowDescription
 * or NoData) or an error.
 */
const QUERY = byte('Q')
const SYNC = byte('S')
const FLUSH = byte('H')
const READY_FOR_QUERY = byte('Z')
const DESCRIPTION_ENDS = new Set([byte('T'), byte('n'), byte('E')])
/** What each owed answer in the queue is for. */
const OWED_READY = 0
const OWED_DESCRIPTION = 1

/** What postgres.js hands its `socket` option: where the connection goes. */
export interface SocketTarget {
  host: string[]
  port: number[]
  path?: string | false
  /** TLS, which postgres.js begins on the socket: nothing the watch could read. */
  ssl?: unknown
}

/**
 * postgres.js's documented `socket` option (its README, "Custom socket"): connections on
 * which the database may not go silent. Our code, on the message flow Postgres documents
 * (https://www.postgresql.org/docs/current/protocol-flow.html); no library internal.
 *
 * A deadline per connection rather than per statement. The server's statement_timeout
 * ends statements that run long, but a database that has gone silent (a hung host, a
 * network that drops packets) answers nothing at all. Once the connection has asked
 * something, each silence of the answer may last `deadlineMs`; past it the connection is
 * closed, which fails what waited on it (503 UNAVAILABLE), and the pool opens a new one,
 * so a stuck connection does not hold up the queries sent after it either.
 *
 * Why neither postgres.js's and Postgres's own deadlines (database-deadlines.test.ts
 * shows them leave such a statement waiting) nor a timer per statement (its CPU): see
 * docs/decisions/database-deadlines.md. The watch reads the messages' headers, so it
 * cannot watch through TLS; see `openPostgres`.
 */
export function silenceWatchedSockets(deadlineMs: number) {
  let connections = 0
  return ({ host, port, path, ssl }: SocketTarget): Socket => {
    const socket = ssl ? new Socket() : new SilenceWatchedSocket(deadlineMs)
    if (path) return socket.connect(path)
    // Several hosts are tried in turn, as postgres.js does.
    const at = connections++ % host.length
    // postgres.js names them in its connection errors.
    return Object.assign(socket.connect(port[at] ?? 5432, host[at] as string), {
      host: host[at],
      port: port[at],
    })
  }
}

type WriteCallback = (error?: Error | null) => void
type Written = Buffer | string
type WrittenChunk = { chunk: Written; encoding: BufferEncoding }

/**
 * A connection that keeps, in order, what the server owes it: a ReadyForQuery for each
 * Query, Sync and its start-up message, and a statement's description for each Flush.
 */
export class SilenceWatchedSocket extends Socket {
  #sent = new MessageFramer()
  #received = new MessageFramer()
  #owed: number[] = []
  #silence: NodeJS.Timeout
  /** Chunks received so far: whether anything came since the deadline passed. */
  #heard = 0
  #started = false
  readonly #onSent = (type: number) => this.#asked(type)
  readonly #onReceived = (type: number) => this.#answered(type)

  constructor(deadlineMs: number) {
    super()
    // Closed without an error: given one, postgres.js would also reject any query it
    // made itself while connecting (target_session_attrs), which nothing awaits, and the
    // process would die of the unhandled rejection. Closed, it fails what waited as
    // CONNECTION_CLOSED. A silent start-up is connect_timeout's, which ends sooner.
    this.#silence = setTimeout(() => this.#closeIfStillSilent(), deadlineMs).unref()
    this.on('data', (chunk: Buffer) => {
      this.#heard++
      this.#received.read(chunk, this.#onReceived)
      // Each part of an answer restarts the clock: the database is slow, not silent.
      if (this.#owed.length > 0) this.#silence.refresh()
    })
    this.once('close', () => clearTimeout(this.#silence))
  }

  /**
   * Timers run before a turn reads its sockets, so after this process was held up (a long
   * collection, a synchronous task) the deadline passes with the answer unread. The
   * verdict waits for this turn's reads: only a connection that still heard nothing closes.
   */
  #closeIfStillSilent() {
    if (this.#owed.length === 0) return
    const heard = this.#heard
    setImmediate(() => {
      if (this.#heard === heard) this.destroy()
    })
  }

  // Writable's own hooks, not write(), which connect() puts back to net.Socket's.
  override _write(chunk: Written, encoding: BufferEncoding, callback: WriteCallback): void {
    this.#sending(chunk, encoding)
    super._write(chunk, encoding, callback)
  }

  override _writev(chunks: WrittenChunk[], callback: WriteCallback): void {
    for (const { chunk, encoding } of chunks) this.#sending(chunk, encoding)
    super._writev?.(chunks, callback)
  }

  #sending(chunk: Written, encoding: BufferEncoding) {
    // net.Socket passes strings on as they were written.
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk
    const wasOwed = this.#owed.length > 0
    if (this.#started) this.#sent.read(bytes, this.#onSent)
    else {
      // The start-up message (or a cancel request) comes first, and has no type byte.
      this.#started = true
      this.#owed.push(OWED_READY)
      this.#sent.read(bytes.subarray(bytes.readUInt32BE(0)), this.#onSent)
    }
    if (!wasOwed && this.#owed.length > 0) this.#silence.refresh()
  }

  #asked(type: number) {
    if (type === QUERY || type === SYNC) this.#owed.push(OWED_READY)
    else if (type === FLUSH) this.#owed.push(OWED_DESCRIPTION)
  }

  // The server answers in the order it was asked.
  #answered(type: number) {
    if (type === READY_FOR_QUERY) {
      // After an error the server skips to the next Sync: a Flush before it goes unanswered.
      while (this.#owed[0] === OWED_DESCRIPTION) this.#owed.shift()
      this.#owed.shift()
    } else if (DESCRIPTION_ENDS.has(type) && this.#owed[0] === OWED_DESCRIPTION) {
      this.#owed.shift()
    }
  }
}

/** Splits a stream of messages, however the network cut it, and names each one's type. */
export class MessageFramer {
  #header = Buffer.alloc(HEADER_BYTES)
  #headerFilled = 0
  #type = 0
  #bodyLeft = 0

  /** Calls `ended` with the type of each message that ends in this chunk. */
  read(chunk: Buffer, ended: (type: number) => void): void {
    let at = 0
    while (at < chunk.length) {
      if (this.#bodyLeft > 0) {
        const taken = Math.min(this.#bodyLeft, chunk.length - at)
        this.#bodyLeft -= taken
        at += taken
      } else if (this.#headerFilled === 0 && chunk.length - at >= HEADER_BYTES) {
        this.#begin(chunk[at] as number, chunk.readUInt32BE(at + 1))
        at += HEADER_BYTES
      } else {
        const wanted = HEADER_BYTES - this.#headerFilled
        const taken = chunk.copy(this.#header, this.#headerFilled, at, at + wanted)
        this.#headerFilled += taken
        at += taken
        if (this.#headerFilled < HEADER_BYTES) break
        this.#headerFilled = 0
        this.#begin(this.#header[0] as number, this.#header.readUInt32BE(1))
      }
      if (this.#bodyLeft === 0 && this.#headerFilled === 0) ended(this.#type)
    }
  }

  #begin(type: number, length: number) {
    this.#type = type
    this.#bodyLeft = length - (HEADER_BYTES - 1)
  }
}
