import { eq } from 'drizzle-orm'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { users } from '../src/db/schema.js'
import { createLiveAccounts } from '../src/platform/infrastructure/live-accounts.js'
import type { ApiResponse } from './helpers/api.js'
import { backends } from './helpers/backends.js'
import { graphql, wsUrl } from './helpers/graphql.js'
import {
  type Closed,
  LEGACY_WS,
  openRawSocket,
  type RawSocket,
  TRANSPORT_WS,
} from './helpers/raw-socket.js'
import { ADMIN, freshAccount, login, startServer, type TestServer } from './helpers/server.js'

/**
 * A token outlives its account: a row deleted in SQL (the API deletes no account) while
 * its tokens are still unexpired. Every path then refuses the token as it refuses a bad
 * one, within 3 s (DESIGN §13), and a write on its behalf is never a 500.
 */

const BOUNDARY = 'gone-account-boundary'
const UPLOAD = [
  `--${BOUNDARY}`,
  'Content-Disposition: form-data; name="file"; filename="notes.txt"',
  'Content-Type: text/plain',
  '',
  'notes of an account about to go',
  `--${BOUNDARY}--`,
  '',
].join('\r\n')
const FORBIDDEN = { code: 4403, reason: 'Forbidden' }

const expectUnauthenticated = (response: ApiResponse) => {
  expect(response.status, response.text).toBe(401)
  expect(response.body.error.code).toBe('UNAUTHENTICATED')
}

describe.each(backends)('tokens of accounts that are gone on $name', (backend) => {
  let server: TestServer
  let productId: number
  const sockets: RawSocket[] = []
  const api = () => server.api

  const order = (token: string) =>
    api().post('/orders', { json: { items: [{ productId, quantity: 1 }] }, token })
  const upload = (token: string) =>
    api().post('/upload', {
      raw: UPLOAD,
      token,
      headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    })
  const deleteInSql = (id: number) =>
    server.testDatabase.database.db.delete(users).where(eq(users.id, id))
  /** A stored account, and its token, that no request has named yet. */
  const account = async () => {
    const { account, accessToken } = await freshAccount(server)
    return { id: account.id, token: accessToken }
  }

  async function socketClose(protocol: string, token: string, by: 'init' | 'header') {
    const socket = await openRawSocket(wsUrl(server.baseUrl), protocol, {
      headers: by === 'header' ? { authorization: `Bearer ${token}` } : {},
    })
    sockets.push(socket)
    socket.send({ type: 'connection_init', payload: by === 'init' ? { authToken: token } : {} })
    return Promise.race([
      socket.closed,
      new Promise<Closed>((_, reject) =>
        setTimeout(() => reject(new Error('the socket stayed open')), 5000).unref(),
      ),
    ])
  }

  beforeAll(async () => {
    server = await startServer(backend)
    const admin = (await login(server.api, ADMIN)).accessToken
    const created = await api().post('/products', {
      json: { name: 'Kept', price: 5, category: 'gone', stock: 1000 },
      token: admin,
    })
    productId = created.body.data.id
  })
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.ws.terminate()
  })
  afterAll(() => server?.close())

  it('answers 401, never 500, to writes right after the row is deleted, while the instance still believes in it', async () => {
    const { id, token } = await account()
    // Both learn the account exists; the deletion follows within the time that is believed.
    expect((await order(token)).status).toBe(201)
    expect((await upload(token)).status).toBe(201)
    await deleteInSql(id)
    expectUnauthenticated(await order(token))
    expectUnauthenticated(await upload(token))
  })

  it('stops authenticating a token that passed within 3 s of the deletion', async () => {
    const { id, token } = await account()
    expect((await api().get('/orders', { token })).status).toBe(200)
    await deleteInSql(id)
    const deletedAt = Date.now()
    await expect
      .poll(async () => (await api().get('/orders', { token })).status, {
        timeout: 3000,
        interval: 100,
      })
      .toBe(401)
    expect(Date.now() - deletedAt).toBeLessThan(3000)
  })

  describe('a token whose account is already gone', () => {
    let token: string
    beforeAll(async () => {
      const gone = await account()
      await deleteInSql(gone.id)
      token = gone.token
    })

    it('is 401 UNAUTHENTICATED on REST, on a read, a write, an upload and an admin route', async () => {
      expectUnauthenticated(await api().get('/orders', { token }))
      expectUnauthenticated(await order(token))
      expectUnauthenticated(await upload(token))
      // Gone, before being a user where an admin is needed (403).
      expectUnauthenticated(await api().post('/products', { json: {}, token }))
    })

    it('fails UNAUTHENTICATED over GraphQL HTTP, as a forged token does', async () => {
      const gone = await graphql(server.baseUrl, '{ me { id } }', {}, token)
      const forged = await graphql(server.baseUrl, '{ me { id } }', {}, 'not-a-token')
      expect(gone.body.errors?.map((error) => error.extensions?.code)).toEqual(['UNAUTHENTICATED'])
      expect(gone.status).toBe(forged.status)
      expect(gone.body.data ?? null).toBeNull()
    })

    it.each([TRANSPORT_WS, LEGACY_WS])(
      'closes a %s socket with 4403, by connection_init and by the upgrade header',
      async (protocol) => {
        expect(await socketClose(protocol, token, 'init')).toEqual(FORBIDDEN)
        expect(await socketClose(protocol, token, 'header')).toEqual(FORBIDDEN)
      },
    )
  })
})

describe('the accounts an instance knows to exist', () => {
  const alice = {
    userId: 7,
    role: 'user',
    sessionVersion: 3,
    expiresAt: Date.now() + 60_000,
  } as const

  it('asks once for concurrent callers, then answers at once without asking', async () => {
    let lookups = 0
    const accounts = createLiveAccounts(async () => {
      lookups += 1
      return 3
    })
    const first = accounts.confirm(alice)
    const second = accounts.confirm(alice)
    expect(first).toBeInstanceOf(Promise)
    expect(await Promise.all([first, second])).toEqual([alice, alice])
    expect(accounts.confirm(alice)).toBe(alice)
    expect(lookups).toBe(1)
  })

  it('refuses a gone account at once while that answer is fresh, and asks again after 2 s', async () => {
    vi.useFakeTimers({ now: Date.now() })
    try {
      let stored: number | undefined = 3
      const accounts = createLiveAccounts(async () => stored)
      await accounts.confirm(alice)
      stored = undefined
      expect(accounts.confirm(alice)).toBe(alice)
      vi.advanceTimersByTime(2000)
      await expect(accounts.confirm(alice)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' })
      expect(() => accounts.confirm(alice)).toThrow(/no longer exists/)
    } finally {
      vi.useRealTimers()
    }
  })
})
