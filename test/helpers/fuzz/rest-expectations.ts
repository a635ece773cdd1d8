import { eq, sql } from 'drizzle-orm'
import { expect } from 'vitest'
import { emails, orders, products, users } from '../../../src/db/schema.js'
import type { OperationId } from '../../../src/http/operations.js'
import type { ApiResponse } from '../api.js'
import type { Caller } from './callers.js'
import type { StoredRows } from './database-state.js'
import { ifMatchHolds } from './if-match.js'
import { credentialExpectations } from './rest-credential-expectations.js'
import { notificationExpectations, orderExpectations } from './rest-order-expectations.js'
import type { FuzzRequest, Inputs, Placeholder } from './rest-requests.js'
import { twoFactorExpectations } from './rest-two-factor-expectations.js'
import { uploadExpectations } from './rest-upload-expectations.js'
import { expectMetrics, userExpectations } from './rest-user-expectations.js'
import { webhookExpectations } from './rest-webhook-expectations.js'
import type { World } from './world.js'

/** A request whose every value fits openapi.yaml, from a caller the operation serves. */
export interface ValidExchange {
  request: FuzzRequest
  response: ApiResponse
  inputs: Inputs
  caller: Caller
  world: World
  /** What was stored before the request. */
  before: StoredRows
}

export type Expectation = (exchange: ValidExchange) => void | Promise<void>

const productRow = async (world: World, id: unknown) =>
  typeof id === 'number'
    ? (await world.db.select().from(products).where(eq(products.id, id)))[0]
    : undefined

/**
 * 404 for an id never used, 410 for a deleted one: the row says which it must be; then
 * 412 for an If-Match that does not hold.
 */
async function expectProductState(exchange: ValidExchange, success: number) {
  const { response, inputs, world } = exchange
  const row = await productRow(world, inputs.path.id)
  if (response.status === 404) return expect(row, 'a 404 for a product that exists').toBeUndefined()
  if (response.status === 410)
    return expect(row?.deletedAt, 'a 410 for a live product').toBeTruthy()
  if (!ifMatchHolds(exchange)) return undefined
  expect([success, 304]).toContain(response.status)
  if (response.status === 304) expect(inputs.header['If-None-Match']).toBeDefined()
  return row
}

const cents = (price: number) => Math.round(price * 100) / 100

/** The stored product answers the request's fields, the price to the cent. */
function expectProductFields(data: Record<string, unknown>, sent: Record<string, unknown>) {
  const { price, ...rest } = sent
  expect(data).toMatchObject(rest)
  if (typeof price === 'number') expect(data.price).toBe(cents(price))
}

const foldAscii = (text: string) => text.replace(/[A-Z]/g, (c) => c.toLowerCase())
/** ILIKE folds case by the database's locale: ASCII only under C, more under others. */
const containsIgnoringCase = (text: string, part: string) =>
  foldAscii(text).includes(foldAscii(part)) ||
  text.toLowerCase().includes(part.toLowerCase()) ||
  text.toUpperCase().includes(part.toUpperCase())

function expectListMatches({ response, inputs }: ValidExchange) {
  const {
    page = 1,
    limit = 10,
    category,
    minPrice,
    maxPrice,
    search,
  } = inputs.query as Record<string, any>
  if (minPrice !== undefined && maxPrice !== undefined && minPrice > maxPrice) {
    return expect(response.status, 'minPrice above maxPrice').toBe(422)
  }
  if (response.status === 304) return expect(inputs.header['If-None-Match']).toBeDefined()
  expect(response.status).toBe(200)
  const { data, pagination } = response.body
  const { total } = pagination
  expect(pagination).toEqual({
    page,
    limit,
    total,
    pages: Math.ceil(total / limit),
    hasNext: page * limit < total,
    hasPrev: page > 1,
    nextCursor: page * limit < total ? expect.any(String) : null,
  })
  expect(data.length).toBeLessThanOrEqual(limit)
  for (const product of data) {
    if (category !== undefined) expect(product.category).toBe(category)
    if (minPrice !== undefined) expect(product.price).toBeGreaterThanOrEqual(minPrice)
    if (maxPrice !== undefined) expect(product.price).toBeLessThanOrEqual(maxPrice)
    if (search !== undefined) expect(containsIgnoringCase(product.name, search)).toBe(true)
  }
}

const sameEmail = (world: World, email: string) =>
  world.db.select({ id: users.id }).from(users).where(sql`lower(${users.email}) = lower(${email})`)

/** Whether a login body names an account of the world with its password. */
function knownCredentials(world: World, body: { email: string; password: string }) {
  return Object.values(world.accounts).some(
    (account) =>
      account.email.toLowerCase() === body.email.toLowerCase() &&
      account.password === body.password,
  )
}

const issuedToken = (body: unknown): Placeholder['placeholder'] | undefined => {
  const token = (body as { refreshToken?: unknown } | undefined)?.refreshToken
  return typeof token === 'object' && token !== null
    ? (token as Placeholder).placeholder
    : undefined
}

/**
 * What each operation answers a valid request from a caller it serves, once the
 * documented rules are kept. The map is total: an operation added to openapi.yaml
 * fails `tsc` here until its answers are stated.
 */
export const validExpectations = {
  listProducts: expectListMatches,

  async getProduct(exchange) {
    await expectProductState(exchange, 200)
    if (exchange.response.status === 200) {
      expect(exchange.response.body.data.id).toBe(exchange.inputs.path.id)
    }
  },

  async createProduct({ response, inputs }) {
    expect(response.status).toBe(201)
    const body = inputs.body as Record<string, unknown>
    expectProductFields(response.body.data, { stock: 0, ...body })
    expect(response.headers.get('location')).toBe(`/products/${response.body.data.id}`)
  },

  async updateProduct(exchange) {
    await expectProductState(exchange, 200)
    if (exchange.response.status === 200) {
      expectProductFields(
        exchange.response.body.data,
        exchange.inputs.body as Record<string, unknown>,
      )
    }
  },

  async replaceProduct(exchange) {
    await expectProductState(exchange, 200)
    if (exchange.response.status === 200) {
      const body = exchange.inputs.body as Record<string, unknown>
      expectProductFields(exchange.response.body.data, { stock: 0, ...body })
    }
  },

  async deleteProduct(exchange) {
    const row = await expectProductState(exchange, 204)
    if (exchange.response.status === 204) expect(row?.deletedAt).toBeTruthy()
  },

  async createUser({ response, inputs, world }) {
    const body = inputs.body as { name: string; email: string; age?: number }
    if (response.status === 409) {
      return expect((await sameEmail(world, body.email)).length, 'a 409 for a free email').toBe(1)
    }
    expect(response.status).toBe(201)
    expect(response.body.data).toMatchObject({
      name: body.name,
      email: body.email,
      age: body.age ?? null,
      role: 'user',
    })
  },

  login({ response, inputs, world }) {
    const known = knownCredentials(world, inputs.body as { email: string; password: string })
    expect(response.status).toBe(known ? 200 : 401)
  },

  refreshTokens({ response, inputs }) {
    expect(response.status).toBe(issuedToken(inputs.body) === 'ownRefreshToken' ? 200 : 401)
  },

  logout({ response, inputs }) {
    // Any token of the caller's own session ends it, a retired one too.
    expect(response.status).toBe(issuedToken(inputs.body) ? 204 : 401)
  },

  getHealth: expectProbe,
  getReadiness: expectProbe,
  getMetrics: expectMetrics,
  generateReport: expectReport,

  async sendEmail({ response, inputs, world }) {
    expect(response.status, response.text).toBe(202)
    const body = inputs.body as { to: string; subject: string; text: string }
    expect(response.body.data).toMatchObject({ to: body.to, subject: body.subject })
    expect(response.headers.get('location')).toBe(`/emails/${response.body.data.id}`)
    const [row] = await world.db.select().from(emails).where(eq(emails.id, response.body.data.id))
    expect(row).toMatchObject({ recipient: body.to, subject: body.subject, text: body.text })
  },

  async getEmail({ response, inputs, world }) {
    const [row] = await world.db
      .select()
      .from(emails)
      .where(eq(emails.id, Number(inputs.path.id)))
    if (!row) return expect(response.status, 'an email that does not exist').toBe(404)
    expect([200, 304]).toContain(response.status)
    if (response.status === 200) {
      expect(response.body.data).toMatchObject({
        id: row.id,
        to: row.recipient,
        subject: row.subject,
      })
    }
  },

  ...userExpectations,
  ...credentialExpectations,
  ...orderExpectations,
  ...notificationExpectations,
  ...uploadExpectations,
  ...twoFactorExpectations,
  ...webhookExpectations,

  receivePaymentWebhook() {
    throw new Error('without WEBHOOK_SECRET a webhook is refused before its answer is judged')
  },
} satisfies Record<OperationId, Expectation>

function expectProbe({ response, inputs }: ValidExchange) {
  expect([200, 304]).toContain(response.status)
  if (response.status === 304) expect(inputs.header['If-None-Match']).toBeDefined()
}

/** The report's figures, recomputed here from every row (the service has SQL do it). */
async function expectReport({ response, inputs, world }: ValidExchange) {
  expect(response.status, response.text).toBe(200)
  const report = response.body.data
  expect(report.type).toBe(inputs.query.type)
  if (report.type === 'catalog') {
    const live = await world.db.select().from(products).where(sql`${products.deletedAt} is null`)
    const categories = [...new Set(live.map((row) => row.category))].sort()
    expect(report.categories.map((each: { category: string }) => each.category)).toEqual(categories)
    for (const figures of report.categories) {
      const rows = live.filter((row) => row.category === figures.category)
      const prices = rows.map((row) => row.price)
      expect(figures).toMatchObject({
        products: rows.length,
        minPrice: Math.min(...prices),
        maxPrice: Math.max(...prices),
        totalStock: rows.reduce((sum, row) => sum + row.stock, 0),
      })
      const average = prices.reduce((sum, price) => sum + price, 0) / rows.length
      expect(Math.abs(figures.avgPrice - average)).toBeLessThanOrEqual(0.0051)
      const value = rows.reduce((sum, row) => sum + row.price * row.stock, 0)
      // Exact in the database (numeric); summed here in floats, which drift past 2^53.
      expect(Math.abs(figures.stockValue - value)).toBeLessThanOrEqual(
        Math.max(0.005, value * 1e-12),
      )
    }
    return
  }
  const placed = await world.db.select().from(orders)
  const statuses = [...new Set(placed.map((row) => row.status))].sort()
  expect(report.byStatus.map((each: { status: string }) => each.status)).toEqual(statuses)
  const days = [...new Set(placed.map((row) => row.createdAt.toISOString().slice(0, 10)))].sort()
  expect(report.byDay.map((each: { day: string }) => each.day)).toEqual(days)
  expect(report.byDay.reduce((sum: number, day: { orders: number }) => sum + day.orders, 0)).toBe(
    placed.length,
  )
}
