import { count } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { webhookEndpointDeliveries, webhookEndpoints } from '../src/db/schema.js'
import { nonPublicKind } from '../src/domains/webhooks/webhook-targets.js'
import { backends } from './helpers/backends.js'
import { ADMIN, login, startServer, type TestServer } from './helpers/server.js'
import { type WebhookReceiver, webhookReceiver } from './helpers/webhook-receiver.js'

describe('the kinds of address a webhook may not reach', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['fd12:3456::1', 'unique-local'],
    ['::ffff:127.0.0.1', 'IPv4-mapped'],
    ['::ffff:8.8.8.8', 'IPv4-mapped'],
    ['192.0.2.10', 'reserved'],
    ['2001:db8::1', 'reserved'],
  ])('%s is %s', (address, kind) => {
    expect(nonPublicKind(address)).toBe(kind)
  })

  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111'])(
    '%s is public',
    (address) => {
      expect(nonPublicKind(address)).toBeUndefined()
    },
  )
})

describe.each(backends)('the webhook target guard on $name', (backend) => {
  let server: TestServer
  let receiver: WebhookReceiver
  let admin: string
  /** Names as a stub resolver answers them, asked in turn: the last answer repeats. */
  const answers = new Map<string, string[]>()
  const asked: string[] = []
  const resolveHost = async (hostname: string) => {
    asked.push(hostname)
    const queue = answers.get(hostname)
    if (!queue)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' })
    const address = (queue.length > 1 ? queue.shift() : queue[0]) as string
    return [{ address, family: address.includes(':') ? 6 : 4 }]
  }
  const stored = async () =>
    (await server.testDatabase.database.db.select({ n: count() }).from(webhookEndpoints))[0]?.n
  const create = (url: string) =>
    server.api.post('/webhook-endpoints', {
      json: { url, events: ['product.created'] },
      token: admin,
    })

  beforeAll(async () => {
    receiver = await webhookReceiver()
    answers.set('hooks.internal.test', ['127.0.0.1'])
    answers.set('localhost', ['127.0.0.1'])
    answers.set('metadata.test', ['169.254.169.254'])
    answers.set('v6.internal.test', ['::1'])
    server = await startServer(backend, {}, { resolveHost })
    admin = (await login(server.api, ADMIN)).accessToken
  })
  afterAll(async () => {
    await server?.close()
    await receiver?.close()
  })

  it.each([
    [
      'http://hooks.internal.test/in',
      /hooks\.internal\.test resolves to 127\.0\.0\.1, which is a loopback address/,
    ],
    ['http://localhost:8080/', /loopback/],
    ['http://metadata.test/latest', /link-local/],
    ['http://v6.internal.test/', /loopback/],
    ['http://127.0.0.1/', /127\.0\.0\.1 is a loopback address/],
    ['http://10.0.0.7/hooks', /private/],
    ['https://192.168.0.1/', /private/],
    ['http://[::1]:3000/', /loopback/],
    ['http://[fd00::1]/', /unique-local/],
    ['http://[::ffff:10.0.0.1]/', /an IPv4-mapped address/],
    ['http://169.254.169.254/latest/meta-data', /link-local/],
    ['http://100.64.1.1/', /carrier-grade NAT/],
    ['http://0.0.0.0:80/', /unspecified/],
    ['http://2130706433/', /loopback/],
    ['http://nowhere.test/', /does not resolve/],
  ])('refuses %s with 400, storing nothing', async (url, why) => {
    const before = await stored()
    const response = await create(url)
    expect(response.status, response.text).toBe(400)
    expect(response.body.error.code).toBe('VALIDATION_ERROR')
    expect(response.body.error.details.url).toEqual([expect.stringMatching(why)])
    expect(await stored()).toBe(before)
  })

  it('checks a name again at each delivery, and connects to no address it refused', async () => {
    // Public when saved; the loopback (where the receiver is) when the delivery looks.
    answers.set('rebinding.test', ['93.184.215.14', '127.0.0.1'])
    const created = await create(`http://rebinding.test:${receiver.port}/rebound`)
    expect(created.status, created.text).toBe(201)
    await server.api.post('/products', {
      json: { name: 'Rebound', price: 2, category: 'guard' },
      token: admin,
    })
    const deliveries = () =>
      server.testDatabase.database.db.select().from(webhookEndpointDeliveries)
    await expect
      .poll(async () => (await deliveries())[0]?.attempts ?? 0, { timeout: 15_000 })
      .toBeGreaterThan(0)
    await expect
      .poll(async () => (await deliveries())[0]?.lastError, { timeout: 15_000 })
      .toMatch(
        /refused target: rebinding\.test resolves to 127\.0\.0\.1, which is a loopback address/,
      )
    expect((await deliveries())[0]?.lastStatusCode).toBeNull()
    expect(receiver.receivedAt('/rebound')).toEqual([])
  })

  it('connects to the address it checked, when private targets are allowed', async () => {
    const allowing = await startServer(
      backend,
      { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' },
      { resolveHost },
    )
    try {
      const token = (await login(allowing.api, ADMIN)).accessToken
      // A name only the stub knows: the connection can only have used the stub's answer.
      answers.set('hooks.example.test', ['127.0.0.1'])
      const url = `http://hooks.example.test:${receiver.port}/named`
      const created = await allowing.api.post('/webhook-endpoints', {
        json: { url, events: ['product.created'] },
        token,
      })
      expect(created.status, created.text).toBe(201)
      await allowing.api.post('/products', {
        json: { name: 'Named', price: 2, category: 'guard' },
        token,
      })
      await expect.poll(() => receiver.receivedAt('/named').length, { timeout: 15_000 }).toBe(1)
      expect(receiver.receivedAt('/named')[0]?.headers.host).toBe(
        `hooks.example.test:${receiver.port}`,
      )
      expect(asked).toContain('hooks.example.test')
    } finally {
      await allowing.close()
    }
  })
})
