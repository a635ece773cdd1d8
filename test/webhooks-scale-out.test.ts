import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backends } from './helpers/backends.js'
import { redisUrl } from './helpers/redis.js'
import { ADMIN, login, newUser, startServer, type TestServer } from './helpers/server.js'
import { type WebhookReceiver, webhookReceiver } from './helpers/webhook-receiver.js'

const PRODUCTS = 40
const ORDERS = 10
const FAILURES = 10

describe.runIf(redisUrl).each(backends)(
  'webhooks from two instances through Redis on $name',
  (backend) => {
    let instances: TestServer[]
    let receiver: WebhookReceiver
    let admin: string
    const environment = {
      REDIS_URL: redisUrl as string,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '1s',
    }

    beforeAll(async () => {
      receiver = await webhookReceiver()
      const first = await startServer(backend, environment)
      const second = await startServer(backend, environment, { testDatabase: first.testDatabase })
      instances = [first, second]
      admin = (await login(first.api, ADMIN)).accessToken
    })
    afterAll(async () => {
      for (const instance of [...(instances ?? [])].reverse()) await instance.close()
      await receiver?.close()
    })

    it('delivers each event once per endpoint, whichever instance committed or claims it', async () => {
      const [first, second] = instances as [TestServer, TestServer]
      // One endpoint that fails its first attempts: their retries are claimed again too.
      receiver.answer('/flaky', ...Array(FAILURES).fill(500), 200)
      const paths = ['/steady', '/flaky']
      for (const [index, path] of paths.entries()) {
        const created = await instances[index % 2]?.api.post('/webhook-endpoints', {
          json: { url: receiver.url(path), events: ['product.created', 'order.created'] },
          token: admin,
        })
        expect(created?.status, created?.text).toBe(201)
      }
      const products = await Promise.all(
        Array.from({ length: PRODUCTS }, async (_, index) => {
          const through = index % 2 === 0 ? first : second
          const created = await through.api.post('/products', {
            json: { name: `Scaled ${index}`, price: 1, category: 'scaled', stock: 100 },
            token: admin,
          })
          expect(created.status, created.text).toBe(201)
          return created.body.data.id as number
        }),
      )
      const buyer = await newUser(first.api)
      await Promise.all(
        Array.from({ length: ORDERS }, async (_, index) => {
          const through = index % 2 === 0 ? second : first
          const placed = await through.api.post('/orders', {
            json: { items: [{ productId: products[index], quantity: 1 }] },
            token: buyer.accessToken,
          })
          expect(placed.status, placed.text).toBe(201)
        }),
      )
      const events = PRODUCTS + ORDERS
      const succeeded = (path: string) =>
        new Set(receiver.receivedAt(path).map((each) => each.headers['webhook-id'])).size
      await expect.poll(() => succeeded('/steady'), { timeout: 30_000 }).toBe(events)
      await expect.poll(() => succeeded('/flaky'), { timeout: 30_000 }).toBe(events)
      // And the retries of the failed attempts.
      await expect
        .poll(() => receiver.receivedAt('/flaky').length, { timeout: 30_000 })
        .toBeGreaterThanOrEqual(events + FAILURES)
      const steady = receiver.receivedAt('/steady').map((each) => each.headers['webhook-id'])
      const flaky = receiver.receivedAt('/flaky').map((each) => each.headers['webhook-id'])
      // Once each at the steady endpoint; at the other, the failed attempts once more.
      expect(steady).toHaveLength(events)
      expect(flaky).toHaveLength(events + FAILURES)
      // The same events, under the same ids, at both.
      expect(new Set(flaky)).toEqual(new Set(steady))
      const types = receiver.receivedAt('/steady').map((each) => JSON.parse(each.body).type)
      expect(types.filter((type) => type === 'order.created')).toHaveLength(ORDERS)
      console.info(
        `two instances: ${events} events, ${steady.length} deliveries to one endpoint, ${flaky.length} attempts to the other (${FAILURES} failed, then retried), duplicates: ${steady.length - new Set(steady).size}`,
      )
    })
  },
)
