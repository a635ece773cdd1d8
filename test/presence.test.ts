import type { Client, ClientOptions } from 'graphql-ws'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createApi } from './helpers/api.js'
import { backends } from './helpers/backends.js'
import { collect, subscriptionsActive, wsClient } from './helpers/graphql.js'
import { redisUrl } from './helpers/redis.js'
import {
  ADMIN,
  login,
  newUser,
  startServer,
  type TestServer,
  testEnvironment,
} from './helpers/server.js'
import { startedProcess, stopProcesses } from './helpers/server-process.js'

/**
 * userStatusChanged: a user is online while one of their WebSockets is open on any
 * instance; the first one opening and the last one closing are published, nothing else.
 */

const STATUS_CHANGED = `subscription {
  userStatusChanged { userId online lastSeen user { name } }
}`

interface StatusEvent {
  userStatusChanged: {
    userId: string
    online: boolean
    lastSeen: string | null
    user: { name: string } | null
  }
}

const variants = backends.flatMap((backend) => [
  { backend, label: `${backend.name}, in-process`, environment: {} as Record<string, string> },
  ...(redisUrl
    ? [{ backend, label: `${backend.name}, Redis`, environment: { REDIS_URL: redisUrl } }]
    : []),
])

/** Sockets of a test, each connected (acknowledged) before it is handed back. */
function socketsOf(baseUrl: () => string) {
  const open: Client[] = []
  return {
    async connect(accessToken?: string, url = baseUrl(), options?: Partial<ClientOptions>) {
      const client = wsClient(url, accessToken ? { authToken: accessToken } : undefined, options)
      await new Promise<void>((resolve, reject) => {
        client.on('connected', () => resolve())
        client.on('closed', (event) => reject(new Error(`closed: ${JSON.stringify(event)}`)))
      })
      open.push(client)
      return client
    },
    async closeAll() {
      await Promise.all(open.splice(0).map((client) => client.dispose()))
    },
  }
}

/** A watcher's events about the given users only (its own socket is a user's too). */
function watch(client: Client, ...userIds: number[]) {
  const subscription = collect<StatusEvent>(client, STATUS_CHANGED)
  const about = () =>
    subscription.items
      .map((item) => item.userStatusChanged)
      .filter((status) => userIds.includes(Number(status.userId)))
  return {
    subscription,
    about,
    /** Resolves once `count` events about the users arrived. */
    async until(count: number, timeoutMs = 10_000) {
      await expect.poll(() => about().length, { timeout: timeoutMs, interval: 20 }).toBe(count)
      return about()
    },
  }
}

describe.each(variants)('presence on $label', ({ backend, environment }) => {
  let server: TestServer
  let admin: string
  const sockets = socketsOf(() => server.baseUrl)

  beforeAll(async () => {
    server = await startServer(backend, environment)
    admin = (await login(server.api, ADMIN)).accessToken
  })
  afterEach(() => sockets.closeAll())
  afterAll(() => server?.close())

  it('publishes the first socket of a user opening and the last closing, nothing between', async () => {
    const [alice, bob] = [await newUser(server.api), await newUser(server.api)]
    const watcher = watch(await sockets.connect(admin), alice.user.id, bob.user.id)
    await subscriptionsActive(server.events, 1)

    const first = await sockets.connect(alice.accessToken)
    const [online] = await watcher.until(1)
    expect(online).toEqual({
      userId: String(alice.user.id),
      online: true,
      lastSeen: null,
      user: { name: alice.user.name },
    })

    // A second socket, then closing one of the two: Alice stays online, nothing is said.
    const second = await sockets.connect(alice.accessToken)
    await first.dispose()
    // Bob's arrival is the barrier: had Alice's changes been published, they came first.
    await sockets.connect(bob.accessToken)
    const afterBarrier = await watcher.until(2)
    expect(afterBarrier[1]).toMatchObject({ userId: String(bob.user.id), online: true })

    const closedAt = Date.now()
    await second.dispose()
    const [, , offline] = await watcher.until(3)
    expect(offline).toMatchObject({ userId: String(alice.user.id), online: false })
    const lastSeen = Date.parse(offline?.lastSeen ?? '')
    expect(lastSeen).toBeGreaterThanOrEqual(closedAt - 1000)
    expect(lastSeen).toBeLessThanOrEqual(Date.now())
  })

  it("resolves each event's user with their posts as they are at that event", async () => {
    const carol = await newUser(server.api)
    const write = async (title: string) => {
      const response = await server.api.post(`/users/${carol.user.id}/posts`, {
        json: { title },
        token: carol.accessToken,
      })
      expect(response.status, response.text).toBe(201)
    }
    await write('first')
    await write('second')
    const watcher = collect<{
      userStatusChanged: {
        userId: string
        online: boolean
        user: { name: string; posts: { title: string; author: { name: string } }[] }
      }
    }>(
      await sockets.connect(admin),
      `subscription { userStatusChanged {
        userId online user { name posts(limit: 1) { title author { name } } }
      } }`,
    )
    await subscriptionsActive(server.events, 1)
    const aboutCarol = () =>
      watcher.items
        .map((item) => item.userStatusChanged)
        .filter((status) => status.userId === String(carol.user.id))

    const socket = await sockets.connect(carol.accessToken)
    await expect.poll(() => aboutCarol().length, { timeout: 10_000 }).toBe(1)
    await write('third')
    await socket.dispose()
    await expect.poll(() => aboutCarol().length, { timeout: 10_000 }).toBe(2)
    const newest = (index: number) => aboutCarol()[index]?.user.posts
    expect(newest(0)).toEqual([{ title: 'second', author: { name: carol.user.name } }])
    expect(newest(1)).toEqual([{ title: 'third', author: { name: carol.user.name } }])
  })

  it('refuses an anonymous subscriber with UNAUTHENTICATED, and delivers nothing', async () => {
    const anonymous = await sockets.connect()
    const codes: unknown[][] = []
    anonymous.subscribe(
      { query: STATUS_CHANGED },
      {
        next: (answer) => codes.push((answer.errors ?? []).map((error) => error.extensions?.code)),
        error: () => {},
        complete: () => {},
      },
    )
    await expect.poll(() => codes.length).toBe(1)
    expect(codes).toEqual([['UNAUTHENTICATED']])
    expect(server.events.activeSubscriptions()).toBe(0)
  })
})

describe.runIf(redisUrl).each(backends)('presence across instances on $name', (backend) => {
  const PRESENCE_TIMEOUT_MS = 2000
  let first: TestServer
  let second: TestServer
  let admin: string
  const sockets = socketsOf(() => first.baseUrl)

  beforeAll(async () => {
    const environment = {
      REDIS_URL: redisUrl as string,
      PRESENCE_TIMEOUT_MS: String(PRESENCE_TIMEOUT_MS),
    }
    first = await startServer(backend, environment)
    second = await startServer(backend, environment, { testDatabase: first.testDatabase })
    admin = (await login(first.api, ADMIN)).accessToken
  })
  afterEach(() => sockets.closeAll())
  afterAll(async () => {
    await stopProcesses()
    await second?.close()
    await first?.close()
  })

  it('keeps a user online while a socket is open on either instance', async () => {
    const dave = await newUser(first.api)
    const watcher = watch(await sockets.connect(admin, second.baseUrl), dave.user.id)
    await subscriptionsActive(second.events, 1)

    const onFirst = await sockets.connect(dave.accessToken, first.baseUrl)
    await watcher.until(1)
    const onSecond = await sockets.connect(dave.accessToken, second.baseUrl)
    await onFirst.dispose()
    await onSecond.dispose()
    const statuses = await watcher.until(2)
    expect(statuses.map((status) => status.online)).toEqual([true, false])
  })

  it('counts nobody out after a pause of the whole process, which silenced every instance', async () => {
    const [frank, grace, heidi] = [
      await newUser(first.api),
      await newUser(first.api),
      await newUser(first.api),
    ]
    const users = [frank, grace, heidi].map(({ user }) => user.id)
    const watcher = watch(await sockets.connect(admin, second.baseUrl), ...users)
    await subscriptionsActive(second.events, 1)
    // A user on each instance: whichever beats first after the pause, one would flap.
    await sockets.connect(frank.accessToken, first.baseUrl)
    await watcher.until(1)
    await sockets.connect(grace.accessToken, second.baseUrl)
    await watcher.until(2)

    // Both instances share this event loop: blocked longer than the silence allowed
    // (three beats), each finds the other silent at its first beat after.
    const pausedUntil = Date.now() + PRESENCE_TIMEOUT_MS
    while (Date.now() < pausedUntil) {}
    await new Promise((resolve) => setTimeout(resolve, PRESENCE_TIMEOUT_MS / 2))
    // Heidi's arrival is the barrier: a counting out during the beats above came first.
    await sockets.connect(heidi.accessToken, first.baseUrl)
    const statuses = await watcher.until(3)
    expect(statuses.map(({ userId, online }) => [Number(userId), online])).toEqual(
      users.map((userId) => [userId, true]),
    )
  })

  it('publishes the users of an instance killed with SIGKILL offline, from a survivor', async () => {
    // An instance in a process of its own, sharing the deployment's Redis and secret, and
    // its database where another process can reach it (PGlite's is in this one).
    const doomed = await startedProcess({
      ...testEnvironment,
      ...(first.testDatabase.url !== undefined && { DATABASE_URL: first.testDatabase.url }),
      NODE_ENV: 'production',
      PASSWORD_HASH_COST: '15',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
      REDIS_URL: redisUrl as string,
      REDIS_KEY_PREFIX: first.testDatabase.redisKeyPrefix,
      PRESENCE_TIMEOUT_MS: String(PRESENCE_TIMEOUT_MS),
    })
    // Signed up there: on PGlite its database is its own, and a token of an account
    // it does not hold would be refused.
    const erin = await newUser(createApi(doomed.baseUrl))
    const watcher = watch(await sockets.connect(admin), erin.user.id)
    await subscriptionsActive(first.events, 1)
    // Its socket closes abruptly (1006) when the instance is killed, as it should.
    await sockets.connect(erin.accessToken, doomed.baseUrl, { onNonLazyError: () => {} })
    const [online] = await watcher.until(1)
    expect(online).toMatchObject({ userId: String(erin.user.id), online: true })

    const killedAt = Date.now()
    doomed.child.kill('SIGKILL')
    const [, offline] = await watcher.until(2, 20_000)
    const noticedMs = Date.now() - killedAt
    expect(offline).toMatchObject({ userId: String(erin.user.id), online: false })
    // lastSeen is the dead instance's last heartbeat: before the kill, within one beat.
    const lastSeen = Date.parse(offline?.lastSeen ?? '')
    expect(lastSeen).toBeLessThanOrEqual(killedAt + 100)
    expect(lastSeen).toBeGreaterThan(killedAt - PRESENCE_TIMEOUT_MS)
    console.info(`presence: SIGKILL noticed after ${noticedMs} ms (PRESENCE_TIMEOUT_MS 2000)`)
  })
})
