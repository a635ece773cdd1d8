import { sql } from 'drizzle-orm'
import { MAX_REPLAYED } from '../../../src/graphql/resumable.js'
import type { Caller } from './callers.js'
import { rowsOfStatement, type StoredOrder, storedRows } from './database-state.js'
import { adminsOnly, needsToken } from './documented-rules.js'
import type { GraphqlRequest } from './graphql-requests.js'
import type { RootField } from './graphql-schema.js'
import { accountOf, type World } from './world.js'

const signedIn = (caller: Caller) => caller === 'user' || caller === 'admin'

/**
 * UNAUTHENTICATED for a caller without a token, where the field needs one; FORBIDDEN for
 * one who is no admin, where the field is for admins. First of all, before its arguments.
 */
export function callerRefusal({ field }: RootField, caller: Caller) {
  if (!signedIn(caller)) return needsToken(field.description) ? 'UNAUTHENTICATED' : undefined
  return adminsOnly(field.description) && caller !== 'admin' ? 'FORBIDDEN' : undefined
}

/** The id of the row an ID names: its decimal text, as the schema's ids are written. */
function rowIdOf(id: unknown): number | undefined {
  const text = String(id)
  return /^[1-9]\d{0,9}$/.test(text) && Number(text) <= 2 ** 31 - 1 ? Number(text) : undefined
}

/** The stored user an ID names, if any. */
export async function userNamed(world: World, id: unknown) {
  const rowId = rowIdOf(id)
  return rowId === undefined ? undefined : (await storedRows(world.db)).users.get(rowId)
}

/** The stored order an ID names, if any. */
export async function orderNamed(world: World, id: unknown): Promise<StoredOrder | undefined> {
  const rowId = rowIdOf(id)
  return rowId === undefined ? undefined : (await storedRows(world.db)).orders.get(rowId)
}

/** The caller's own notification an ID names, if any: another user's is as none. */
export async function ownNotification(world: World, caller: Caller, id: unknown) {
  const rowId = rowIdOf(id)
  const row =
    rowId === undefined ? undefined : (await storedRows(world.db)).notifications.get(rowId)
  return row?.userId === accountOf(world, caller).id ? row : undefined
}

/** NOT_FOUND for an unknown order, FORBIDDEN for another user's: an admin sees any. */
async function orderRefusal(world: World, caller: Caller, id: unknown) {
  const order = await orderNamed(world, id)
  if (!order) return 'NOT_FOUND'
  return caller === 'admin' || order.userId === accountOf(world, caller).id
    ? undefined
    : 'FORBIDDEN'
}

/** What follows the message an ID names: its chat, and how many messages of it are later. */
async function messageNamed(world: World, id: unknown) {
  const rowId = rowIdOf(id)
  if (rowId === undefined) return undefined
  const [row] = await rowsOfStatement<{ chatId: string; later: number }>(
    world.db,
    sql`select chat_id as "chatId", (select count(*)::int from messages as later
      where later.chat_id = m.chat_id and later.id > m.id) as later
      from messages as m where m.id = ${rowId}`,
  )
  return row
}

/**
 * BAD_USER_INPUT for an `after` that is not an id of the scope, or one followed by more
 * than the longest replay; messageAdded's needs its `chatId`.
 */
const resumeRefusal = (inScope: boolean, later: number) =>
  inScope && later <= MAX_REPLAYED ? undefined : 'BAD_USER_INPUT'

type Lookup = (world: World, request: GraphqlRequest) => Promise<string | undefined>

/**
 * Fields whose arguments name a row: refused by what is stored, as their descriptions
 * say. Looked up only for a caller the field serves (callerRefusal comes first).
 */
const LOOKUPS: Record<string, Lookup> = {
  user: async (world, { args }) => ((await userNamed(world, args.id)) ? undefined : 'NOT_FOUND'),
  order: (world, { caller, args }) => orderRefusal(world, caller, args.id),
  orderUpdated: (world, { caller, args }) => orderRefusal(world, caller, args.orderId),
  messageAdded: async (world, { args }) => {
    if (args.after == null) return undefined
    const after = await messageNamed(world, args.after)
    const inChat = args.chatId != null && after?.chatId === String(args.chatId)
    return resumeRefusal(inChat, after?.later ?? 0)
  },
  notificationAdded: async (world, { caller, args }) => {
    if (args.after == null) return undefined
    const own = await ownNotification(world, caller, args.after)
    const rows = [...(await storedRows(world.db)).notifications.values()]
    const later = rows.filter((row) => row.userId === own?.userId && row.id > own.id).length
    return resumeRefusal(own !== undefined, later)
  },
  markNotificationRead: async (world, { caller, args }) =>
    (await ownNotification(world, caller, args.id)) ? undefined : 'NOT_FOUND',
}

/** The code valid arguments from a caller the field serves are refused with, by the rows they name. */
export async function lookupRefusal(world: World, field: RootField, request: GraphqlRequest) {
  const lookup = LOOKUPS[field.field.name]
  return lookup ? lookup(world, request) : undefined
}

/** The code valid arguments are refused with, whoever asks (forged tokens aside), if any. */
export async function expectedRefusal(world: World, field: RootField, request: GraphqlRequest) {
  return callerRefusal(field, request.caller) ?? (await lookupRefusal(world, field, request))
}
