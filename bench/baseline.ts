import type { AddressInfo } from 'node:net'
import type { PGlite } from '@electric-sql/pglite'
import Fastify from 'fastify'
import mercurius from 'mercurius'
import mqemitterRedis from 'mqemitter-redis'
import postgres from 'postgres'
import type { DatabaseHandle } from '../src/db/database.js'

/**
 * The same work as the service's benchmarked operations with none of its layers: plain
 * Fastify routes and a bare Mercurius schema, SQL sent straight to the driver. No auth,
 * envelope rules, rate limits, request ids, ETags, cache or outbox: what is left is the
 * floor a request costs on this machine, which `make bench` divides ours by.
 */

type Row = Record<string, unknown>
/** A statement on the bench database; `prepare` names it, to keep its generic plan. */
type Query = (text: string, params: unknown[], prepare: boolean) => Promise<Row[]>

function queryOf(database: DatabaseHandle, databaseUrl: string | undefined) {
  if (database.kind === 'postgres' && databaseUrl) {
    const client = postgres(databaseUrl, { max: 10, onnotice: () => {} })
    const query: Query = (text, params, prepare) =>
      client.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare })
    return { query, close: () => client.end() }
  }
  // PGlite is one connection in this process: the baseline shares the service's.
  const client = (database.db as unknown as { $client: PGlite }).$client
  const query: Query = async (text, params) => (await client.query<Row>(text, params)).rows
  return { query, close: async () => {} }
}

const COLUMNS = 'id, name, price::float8 as price, category, stock, created_at, updated_at'

const toProduct = (row: Row) => ({
  id: row.id,
  name: row.name,
  price: row.price,
  category: row.category,
  stock: row.stock,
  createdAt: new Date(row.created_at as string).toISOString(),
  updatedAt: new Date(row.updated_at as string).toISOString(),
})

interface ListQuery {
  page: number
  limit: number
  category?: string
  minPrice?: number
  maxPrice?: number
  search?: string
}

/** The list and its total, as the service computes them (counts per category when it can). */
async function listProducts(query: Query, filters: ListQuery) {
  const conditions = ['deleted_at is null']
  const params: unknown[] = []
  const where = (condition: string, value: unknown) => {
    params.push(value)
    conditions.push(condition.replace('?', `$${params.length}`))
  }
  if (filters.category !== undefined) where('category = ?', filters.category)
  if (filters.minPrice !== undefined) where('price >= ?', filters.minPrice)
  if (filters.maxPrice !== undefined) where('price <= ?', filters.maxPrice)
  if (filters.search !== undefined) where('name ilike ?', `%${filters.search}%`)
  const counted = filters.minPrice ?? filters.maxPrice ?? filters.search
  const total =
    counted === undefined
      ? query(
          'select coalesce(sum(live), 0)::int as total from product_counts' +
            (filters.category === undefined ? '' : ' where category = $1'),
          filters.category === undefined ? [] : [filters.category],
          false,
        )
      : query(
          `select count(*)::int as total from products where ${conditions.join(' and ')}`,
          params,
          false,
        )
  const rows = query(
    `select ${COLUMNS} from products where ${conditions.join(' and ')}
     order by created_at desc, id desc limit ${filters.limit} offset ${(filters.page - 1) * filters.limit}`,
    params,
    false,
  )
  const [[counts], items] = await Promise.all([total, rows])
  return { data: items.map(toProduct), pagination: { page: filters.page, total: counts?.total } }
}

const schema = `
  type Message { id: ID!, chatId: ID!, text: String!, author: String!, createdAt: String! }
  type Query { messages(limit: Int = 100): [Message!]! }
  type Mutation { sendMessage(text: String!, author: String!, chatId: ID! = "general"): Message! }
  type Subscription { messageAdded: Message! }
`

const toMessage = (row: Row) => ({
  id: String(row.id),
  chatId: row.chat_id,
  text: row.text,
  author: row.author,
  createdAt: new Date(row.created_at as string).toISOString(),
})

export async function startBaseline(
  database: DatabaseHandle,
  databaseUrl: string | undefined,
  redisUrl: string | undefined,
) {
  const { query, close } = queryOf(database, databaseUrl)
  // Published as the service publishes: through Redis to every instance, when it has one.
  // Mercurius leaves an emitter it was given open: closed below, or the process never ends.
  const emitter = redisUrl ? mqemitterRedis({ connectionString: redisUrl }) : undefined
  const app = Fastify()

  app.get<{ Querystring: ListQuery }>(
    '/products',
    {
      schema: {
        querystring: {
          type: 'object',
          properties: {
            page: { type: 'integer', minimum: 1, default: 1 },
            limit: { type: 'integer', minimum: 1, maximum: 100, default: 10 },
            category: { type: 'string', maxLength: 100 },
            minPrice: { type: 'number', minimum: 0 },
            maxPrice: { type: 'number', minimum: 0 },
            search: { type: 'string', maxLength: 100 },
          },
        },
      },
    },
    (request) => listProducts(query, request.query),
  )

  app.get<{ Params: { id: number } }>(
    '/products/:id',
    { schema: { params: { type: 'object', properties: { id: { type: 'integer', minimum: 1 } } } } },
    async (request, reply) => {
      const [row] = await query(
        `select ${COLUMNS} from products where id = $1`,
        [request.params.id],
        true,
      )
      return row ? { data: toProduct(row) } : reply.code(404).send({ error: 'not found' })
    },
  )

  app.post<{ Body: { name: string; price: number; category: string; stock?: number } }>(
    '/products',
    {
      schema: {
        body: {
          type: 'object',
          required: ['name', 'price', 'category'],
          additionalProperties: false,
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 200 },
            price: { type: 'number', exclusiveMinimum: 0 },
            category: { type: 'string', minLength: 1, maxLength: 100 },
            stock: { type: 'integer', minimum: 0 },
          },
        },
      },
    },
    async (request, reply) => {
      const { name, price, category, stock = 0 } = request.body
      const [row] = await query(
        `insert into products (name, price, category, stock) values ($1, $2, $3, $4) returning ${COLUMNS}`,
        [name, price, category, stock],
        true,
      )
      return reply.code(201).send({ data: row && toProduct(row) })
    },
  )

  await app.register(mercurius, {
    schema,
    // As the service and the peer suite's baseline run it: compiled once seen twice.
    jit: 1,
    resolvers: {
      Query: {
        messages: async (_root: unknown, { limit }: { limit: number }) =>
          (await query('select * from messages order by id desc limit $1', [limit], true)).map(
            toMessage,
          ),
      },
      Mutation: {
        sendMessage: async (
          _root: unknown,
          { text, author, chatId }: { text: string; author: string; chatId: string },
          { pubsub }: { pubsub: mercurius.PubSub },
        ) => {
          const [row] = await query(
            'insert into messages (chat_id, text, author) values ($1, $2, $3) returning *',
            [chatId, text, author],
            true,
          )
          const message = row && toMessage(row)
          await pubsub.publish({ topic: 'baseline-messages', payload: { messageAdded: message } })
          return message
        },
      },
      Subscription: {
        messageAdded: {
          subscribe: (_root: unknown, _args: unknown, { pubsub }: { pubsub: mercurius.PubSub }) =>
            pubsub.subscribe('baseline-messages'),
        },
      },
    },
    subscription: emitter ? { emitter } : true,
  })

  await app.listen({ port: 0, host: '127.0.0.1' })
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    async close() {
      await app.close()
      await new Promise<void>((resolve) => (emitter ? emitter.close(() => resolve()) : resolve()))
      await close()
    },
  }
}
