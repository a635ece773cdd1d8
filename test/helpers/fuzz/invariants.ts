import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { isNull, sql } from 'drizzle-orm'
import type { Database } from '../../../src/db/database.js'
import {
  messages,
  posts,
  productCounts,
  products,
  uploadChunks,
  uploads,
  uploadUsage,
  users,
} from '../../../src/db/schema.js'
import { specification } from '../contract.js'
import type { JsonSchema } from '../schema-arbitrary.js'
import { rowsOfStatement, storedRows } from './database-state.js'
import { brokenRules, documentedRange } from './documented-rules.js'
import { argumentOf } from './graphql-schema.js'
import { orderOf, totalCents } from './orders-model.js'
import { twoFactorProblems } from './rest-two-factor-expectations.js'

const ajv = new Ajv2020({ allErrors: true, strict: false })
addFormats.default(ajv)
// A stored number is a multiple of a decimal step when it has no more digits than the
// step: exact, where dividing in binary floating point is not (19.99 / 0.01).
const digitsOf = (step: number) => (String(step).split('.')[1] ?? '').length
ajv.removeKeyword('multipleOf')
ajv.addKeyword({
  keyword: 'multipleOf',
  type: 'number',
  schemaType: 'number',
  validate: (step: number, value: number) => {
    const scale = 10 ** digitsOf(step)
    const scaled = Math.round(value * scale)
    return (
      Number(value.toFixed(digitsOf(step))) === value && scaled % Math.round(step * scale) === 0
    )
  },
})

/** A stored row holds what its create operation's schema and rules admit, and no more. */
function fitsSchema(schema: JsonSchema, row: Record<string, unknown>, what: string): string[] {
  const validate = ajv.compile(schema)
  const problems = validate(row) ? [] : [`${what}: ${ajv.errorsText(validate.errors)}`]
  for (const [name, value] of Object.entries(row)) {
    const broken = brokenRules(schema.properties?.[name]?.description, value)
    if (broken.length > 0) problems.push(`${what}.${name} breaks ${broken.join(', ')}`)
  }
  return problems
}

const component = (name: string) => specification.components.schemas[name] as JsonSchema

/** Rows hold every field; the schema's optional ones may be null where the column is. */
const withoutNulls = (row: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(row).filter(([, value]) => value !== null))

async function productProblems(db: Database): Promise<string[]> {
  const rows = await db.select().from(products)
  const problems = rows.flatMap(({ id, name, price, category, stock, createdAt, updatedAt }) => [
    ...fitsSchema(component('ProductCreate'), { name, price, category, stock }, `product ${id}`),
    ...(updatedAt < createdAt ? [`product ${id}: updated before it was created`] : []),
  ])
  // The live count per category that the triggers keep, which the list's total reads.
  const live = new Map<string, number>()
  for (const row of await db.select().from(products).where(isNull(products.deletedAt))) {
    live.set(row.category, (live.get(row.category) ?? 0) + 1)
  }
  const counted = new Map<string, number>()
  for (const row of await db.select().from(productCounts)) {
    counted.set(row.category, (counted.get(row.category) ?? 0) + row.live)
  }
  for (const category of new Set([...live.keys(), ...counted.keys()])) {
    if ((live.get(category) ?? 0) !== (counted.get(category) ?? 0)) {
      problems.push(
        `category ${JSON.stringify(category)}: counted ${counted.get(category)}, live ${live.get(category)}`,
      )
    }
  }
  return problems
}

async function userProblems(db: Database): Promise<string[]> {
  const { password: _, ...properties } = component('UserCreate').properties ?? {}
  const stored = { ...component('UserCreate'), properties, required: ['name', 'email'] }
  const rows = await db.select().from(users)
  const emails = new Set<string>()
  // The phone number only PATCH /users/{id} sets, as its schema there admits it.
  const phone = component('UserUpdate').properties?.phoneNumber as JsonSchema
  return rows.flatMap(({ id, name, email, age, role, phoneNumber }) => {
    const key = email.toLowerCase()
    const duplicate = emails.has(key) ? [`user ${id}: email taken twice`] : []
    emails.add(key)
    return [
      ...fitsSchema(stored, withoutNulls({ name, email, age }), `user ${id}`),
      ...(ajv.validate(phone, phoneNumber) ? [] : [`user ${id}: phone number ${phoneNumber}`]),
      ...(ajv.validate(component('Role'), role) ? [] : [`user ${id}: role ${role}`]),
      ...duplicate,
    ]
  })
}

/** Posts as PostCreate admits them, each of a user who is there. */
async function postProblems(db: Database): Promise<string[]> {
  const userIds = new Set((await db.select({ id: users.id }).from(users)).map((row) => row.id))
  const rows = await db.select().from(posts)
  return rows.flatMap(({ id, userId, title, body }) => [
    ...fitsSchema(component('PostCreate'), { title, body }, `post ${id}`),
    ...(userIds.has(userId) ? [] : [`post ${id}: of user ${userId}, who is not there`]),
  ])
}

/** A message's text, author and chat as sendMessage's arguments document them. */
function messageFieldProblem(name: 'text' | 'author' | 'chatId', value: string): string[] {
  const { description } = argumentOf('sendMessage', name)
  const range = documentedRange(description)
  const length = [...value].length
  const problems = brokenRules(description, value).map((rule) => `${name} breaks ${rule}`)
  if (range && (length < range.min || length > range.max)) {
    problems.push(`${name} has ${length} characters, not ${range.min} to ${range.max}`)
  }
  return problems
}

async function messageProblems(db: Database): Promise<string[]> {
  const rows = await db.select().from(messages)
  return rows.flatMap((row) =>
    (['text', 'author', 'chatId'] as const).flatMap((name) =>
      messageFieldProblem(name, row[name]).map((problem) => `message ${row.id}: ${problem}`),
    ),
  )
}

/** Orders as openapi.yaml's Order has them, their total the sum of their items. */
async function orderProblems(db: Database): Promise<string[]> {
  const orders = [...(await storedRows(db)).orders.values()].map(orderOf)
  return orders.flatMap((order) => [
    ...fitsSchema(component('Order'), order, `order ${order.id}`),
    ...(Math.round(order.total * 100) === totalCents(order.items)
      ? []
      : [`order ${order.id}: total ${order.total}, not the sum of its items`]),
    ...(order.updatedAt < order.createdAt ? [`order ${order.id}: updated before placed`] : []),
  ])
}

/**
 * Each upload's chunks hold its size (none once deleted), and each account's usage is
 * what its uploads hold, deleted ones aside: a reservation neither leaked nor lost.
 */
async function uploadProblems(db: Database): Promise<string[]> {
  const stored = await rowsOfStatement<{ id: number; status: string; size: string; bytes: string }>(
    db,
    sql`select u.id, u.status, u.size, coalesce(sum(octet_length(c.bytes)), 0) as bytes
      from ${uploads} u left join ${uploadChunks} c on c.upload_id = u.id group by u.id`,
  )
  const problems = stored.flatMap(({ id, status, size, bytes }) => {
    const expected = status === 'deleted' ? 0 : Number(size)
    return Number(bytes) === expected
      ? []
      : [`upload ${id} (${status}): ${bytes} bytes stored, not ${expected}`]
  })
  const held = await rowsOfStatement<{ user_id: number; held: string; used: string | null }>(
    db,
    sql`select u.owner_id as user_id, sum(u.size) as held, s.used_bytes as used
      from ${uploads} u left join ${uploadUsage} s on s.user_id = u.owner_id
      where u.status <> 'deleted' group by u.owner_id, s.used_bytes`,
  )
  for (const { user_id, held: bytes, used } of held) {
    if (Number(bytes) !== Number(used ?? 0)) {
      problems.push(`user ${user_id}: uploads hold ${bytes} bytes, usage counts ${used}`)
    }
  }
  return problems
}

/**
 * Everything stored obeys the specs' rules, whatever the fuzz run sent: products,
 * users, posts, messages and orders hold valid values, the live counts match the rows,
 * each account's upload usage matches its files, and every TOTP secret is sealed.
 * Empty when so.
 */
export async function storedDataProblems(db: Database): Promise<string[]> {
  return [
    ...(await productProblems(db)),
    ...(await userProblems(db)),
    ...(await postProblems(db)),
    ...(await messageProblems(db)),
    ...(await orderProblems(db)),
    ...(await uploadProblems(db)),
    ...(await twoFactorProblems(db)),
  ]
}
