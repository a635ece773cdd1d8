import { createSigner } from 'fast-jwt'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import type { TokenPrincipal } from '../src/platform/infrastructure/access-tokens.js'
import { createLiveAccounts } from '../src/platform/infrastructure/live-accounts.js'
import { backends } from './helpers/backends.js'
import { graphql, wsUrl } from './helpers/graphql.js'
import {
  type Closed,
  LEGACY_WS,
  openRawSocket,
  type RawSocket,
  TRANSPORT_WS,
} from './helpers/raw-socket.js'
import { redisUrl } from './helpers/redis.js'
import {
  ADMIN,
  login,
  newUser,
  startServer,
  type TestServer,
  testEnvironment,
} from './helpers/server.js'

/**
 * DESIGN §11: when an account's sessions end, its earlier access tokens are refused and
 * its open WebSockets close with 4403, on every instance, within a second; a socket also
 * closes with 4403 when its token expires.
 */

const FORBIDDEN = { code: 4403, reason: 'Forbidden' }
const PROTOCOLS = [TRANSPORT_WS, LEGACY_WS] as const
const STAYS_OPEN_MS = 10_000

/** A socket of the token's account, acknowledged and following a chat. */
async function subscribedSocket(
  server: TestServer,
  protocol: string,
  token: string,
  by: 'init' | 'header',
): Promise<RawSocket> {
  const socket = await openRawSocket(wsUrl(server.baseUrl), protocol, {
    headers: by === 'header' ? { authorization: `Bearer ${token}` } : {},
  })
  socket.send({ type: 'connection_init', payload: by === 'init' ? { authToken: token } : {} })
  expect((await socket.next()).type).toBe('connection_ack')
  socket.send({
    id: '1',
    type: protocol === TRANSPORT_WS ? 'subscribe' : 'start',
    payload: { query: 'subscription { messageAdded(chatId: "revocation") { id } }' },
  })
  return socket
}

const closeOf = (socket: RawSocket): Promise<Closed> =>
  Promise.race([
    socket.closed,
    new Promise<Closed>((_, reject) =>
      setTimeout(() => reject(new Error('the socket stayed open')), STAYS_OPEN_MS).unref(),
    ),
  ])

describe('what an instance knows of sessions', () => {
  const alice: TokenPrincipal = {
    userId: 7,
    role: 'user',
    sessionVersion: 2,
    expiresAt: Date.now() + 60_000,
  }

  it('refuses an older session at once when told, though its last answer is fresh', async () => {
    const accounts = createLiveAccounts(async () => 2)
    expect(await accounts.confirm(alice)).toBe(alice)
    accounts.sessionsEnded(alice.userId, 3)
    expect(() => accounts.confirm(alice)).toThrow(/session of this token has ended/)
    expect(accounts.confirm({ ...alice, sessionVersion: 3 })).toMatchObject({ sessionVersion: 3 })
  })

  it('keeps what it was told over a lookup that began before and ended after', async () => {
    let answer: (version: number) => void = () => {}
    const accounts = createLiveAccounts(() => new Promise<number>((resolve) => (answer = resolve)))
    const looking = accounts.confirm(alice)
    accounts.sessionsEnded(alice.userId, 3)
    answer(2)
    await expect(looking).rejects.toMatchObject({ code: 'UNAUTHENTICATED' })
    expect(() => accounts.confirm(alice)).toThrow(/session of this token has ended/)
  })

  it('tells its listeners of each end, with the version that ended the older ones', () => {
    const accounts = createLiveAccounts(async () => 0)
    const heard = vi.fn()
    accounts.onSessionsEnded(heard)
    accounts.sessionsEnded(9, 4)
    expect(heard).toHaveBeenCalledWith(9, 4)
  })
})

describe.each(backends)('sessions that end on $name', (backend) => {
  let server: TestServer
  const sockets: RawSocket[] = []
  const opened = async (...args: Parameters<typeof subscribedSocket>) => {
    const socket = await subscribedSocket(...args)
    sockets.push(socket)
    return socket
  }

  let admin: string
  beforeAll(async () => {
    server = await startServer(backend)
    admin = (await login(server.api, ADMIN)).accessToken
  })
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.ws.terminate()
  })
  afterAll(() => server?.close())

  it.each(PROTOCOLS)('closes a %s socket with 4403 when its token expires', async (protocol) => {
    const { user, accessToken } = await newUser(server.api)
    // A token of the same account and session that expires in two to three seconds: `exp`
    // is in whole seconds, so a shorter life could end before the socket is acknowledged.
    const claims = JSON.parse(Buffer.from(accessToken.split('.')[1] ?? '', 'base64url').toString())
    const shortLived = createSigner({
      key: testEnvironment.JWT_SECRET,
      algorithm: 'HS256',
      expiresIn: 3000,
    })({ sub: String(user.id), role: 'user', sv: claims.sv })
    const expiring = await opened(server, protocol, shortLived, 'init')
    const lasting = await opened(server, protocol, accessToken, 'init')
    const expiresAt =
      (JSON.parse(Buffer.from(shortLived.split('.')[1] ?? '', 'base64url').toString())
        .exp as number) * 1000
    expect(await closeOf(expiring)).toEqual(FORBIDDEN)
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt)
    expect(lasting.ws.readyState).toBe(lasting.ws.OPEN)
  })

  it('refuses the earlier tokens after a logout-all on REST, GraphQL and WebSocket, and closes its sockets', async () => {
    const { accessToken, refreshToken } = await newUser(server.api)
    const other = await newUser(server.api)
    const own = await Promise.all(
      PROTOCOLS.flatMap((protocol) => [
        opened(server, protocol, accessToken, 'init'),
        opened(server, protocol, accessToken, 'header'),
      ]),
    )
    const bystander = await opened(server, TRANSPORT_WS, other.accessToken, 'init')
    expect((await server.api.get('/orders', { token: accessToken })).status).toBe(200)

    const loggedOut = await server.api.post('/auth/logout-all', { token: accessToken })
    expect(loggedOut.status, loggedOut.text).toBe(204)

    for (const socket of own) expect(await closeOf(socket)).toEqual(FORBIDDEN)
    const refused = await server.api.get('/orders', { token: accessToken })
    expect(refused.status).toBe(401)
    expect(refused.body.error.code).toBe('UNAUTHENTICATED')
    const overGraphql = await graphql(server.baseUrl, '{ me { id } }', {}, accessToken)
    expect(overGraphql.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED')
    const reopened = await openRawSocket(wsUrl(server.baseUrl), TRANSPORT_WS)
    sockets.push(reopened)
    reopened.send({ type: 'connection_init', payload: { authToken: accessToken } })
    expect(await closeOf(reopened)).toEqual(FORBIDDEN)
    const refreshed = await server.api.post('/auth/refresh', { json: { refreshToken } })
    expect(refreshed.status).toBe(401)
    // Another account's session goes on.
    expect(bystander.ws.readyState).toBe(bystander.ws.OPEN)
    expect((await server.api.get('/orders', { token: other.accessToken })).status).toBe(200)
  })

  /** The changes besides logout-all that end every session of the account. */
  const endings: [string, (account: Awaited<ReturnType<typeof newUser>>) => Promise<number>][] = [
    [
      'a password change',
      async ({ password, accessToken }) =>
        (
          await server.api.post('/auth/password', {
            json: { currentPassword: password, newPassword: 'another-password-1' },
            token: accessToken,
          })
        ).status,
    ],
    [
      'a change of role by an admin',
      async ({ user }) =>
        (await server.api.patch(`/users/${user.id}`, { json: { role: 'admin' }, token: admin }))
          .status,
    ],
    [
      'a deletion',
      async ({ user, accessToken }) =>
        (await server.api.delete(`/users/${user.id}`, { token: accessToken })).status,
    ],
  ]

  it.each(endings)(
    'ends the sessions on %s: its sockets close, its token is refused',
    async (_, end) => {
      const account = await newUser(server.api)
      const own = await Promise.all(
        PROTOCOLS.map((protocol) => opened(server, protocol, account.accessToken, 'init')),
      )
      expect([200, 204]).toContain(await end(account))
      for (const socket of own) expect(await closeOf(socket)).toEqual(FORBIDDEN)
      const refused = await server.api.get('/orders', { token: account.accessToken })
      expect(refused.status).toBe(401)
    },
  )

  it('lets a new login in after a logout-all', async () => {
    const account = await newUser(server.api)
    expect((await server.api.post('/auth/logout-all', { token: account.accessToken })).status).toBe(
      204,
    )
    const again = await server.api.post('/auth/login', {
      json: { email: account.email, password: account.password },
    })
    expect(again.status).toBe(200)
    const fresh = again.body.data.accessToken as string
    expect((await server.api.get('/orders', { token: fresh })).status).toBe(200)
    const socket = await opened(server, TRANSPORT_WS, fresh, 'init')
    expect(socket.ws.readyState).toBe(socket.ws.OPEN)
  })
})

describe.runIf(redisUrl).each(backends)(
  'sessions that end across two instances on $name',
  (backend) => {
    let first: TestServer
    let second: TestServer
    const sockets: RawSocket[] = []

    beforeAll(async () => {
      first = await startServer(backend, { REDIS_URL: redisUrl as string })
      second = await startServer(
        backend,
        { REDIS_URL: redisUrl as string },
        { testDatabase: first.testDatabase },
      )
    })
    afterEach(() => {
      for (const socket of sockets.splice(0)) socket.ws.terminate()
    })
    afterAll(async () => {
      await second?.close()
      await first?.close()
    })

    it('closes the sockets on both instances, in both subprotocols, and the other refuses the token at once', async () => {
      const { accessToken } = await newUser(first.api)
      const own = await Promise.all(
        [first, second].flatMap((server) =>
          PROTOCOLS.map((protocol) => subscribedSocket(server, protocol, accessToken, 'init')),
        ),
      )
      sockets.push(...own)
      // The second instance has just found the session current: only the announcement
      // can make it refuse the token before that belief runs out.
      expect((await second.api.get('/orders', { token: accessToken })).status).toBe(200)

      expect((await first.api.post('/auth/logout-all', { token: accessToken })).status).toBe(204)
      for (const socket of own) expect(await closeOf(socket)).toEqual(FORBIDDEN)
      const refused = await second.api.get('/orders', { token: accessToken })
      expect(refused.status).toBe(401)
      expect(refused.body.error.code).toBe('UNAUTHENTICATED')
    })
  },
)
