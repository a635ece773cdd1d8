import { createHash } from 'node:crypto'
import type { ProductFilters, SortKey } from './products-repository.js'

/** Where a walk by cursor stands: after this row, with `passed` items behind it. */
export interface CursorPosition {
  after: SortKey
  passed: number
}

/** What a cursor says: a position, or what is wrong with it. */
export type DecodedCursor =
  | (CursorPosition & { problem?: undefined })
  | { problem: string; after?: undefined; passed?: undefined }

interface CursorFields {
  v: 1
  createdAt: string
  id: number
  passed: number
  /** The digest of the filters it was given for. */
  filters: string
}

const INT32_MAX = 2_147_483_647
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/
const KEYS = ['check', 'createdAt', 'filters', 'id', 'passed', 'v'].join()

const AS_IT_CAME = 'send a pagination.nextCursor as it came'
export const CURSOR_PROBLEMS = {
  unknown: `is not a cursor of this list: ${AS_IT_CAME}`,
  altered: `has been altered: ${AS_IT_CAME}`,
  otherFilters:
    'was given for other filters: send category, minPrice, maxPrice and search as they were',
}

/**
 * A cursor is base64url JSON: the position, the digest of the filters, and a digest of
 * both. Checked, not secret: it keeps a client from walking one list with the cursor of
 * another, or with one it has mangled, and hides nothing a client could not list anyway.
 */
export function encodeCursor({ after, passed }: CursorPosition, filters: ProductFilters): string {
  const fields = { v: 1, ...after, passed, filters: digest(filterValues(filters)) }
  return Buffer.from(JSON.stringify({ ...fields, check: digest(fields) })).toString('base64url')
}

export function decodeCursor(text: string, filters: ProductFilters): DecodedCursor {
  const parsed = parse(text)
  if (!parsed || !isCursor(parsed)) return { problem: CURSOR_PROBLEMS.unknown }
  const { check, v, createdAt, id, passed, filters: given } = parsed
  if (check !== digest({ v, createdAt, id, passed, filters: given })) {
    return { problem: CURSOR_PROBLEMS.altered }
  }
  if (given !== digest(filterValues(filters))) return { problem: CURSOR_PROBLEMS.otherFilters }
  return { after: { createdAt, id }, passed }
}

function parse(text: string): unknown {
  const bytes = Buffer.from(text, 'base64url')
  // The decoder skips what it cannot read; one text per cursor is all it was given.
  if (bytes.toString('base64url') !== text) return undefined
  try {
    return JSON.parse(bytes.toString('utf8'))
  } catch {
    return undefined
  }
}

function isCursor(value: unknown): value is CursorFields & { check: string } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const { v, createdAt, id, passed, filters, check } = value as Record<string, unknown>
  return (
    Object.keys(value).sort().join() === KEYS &&
    v === 1 &&
    isInstant(createdAt) &&
    isInteger(id, 1) &&
    isInteger(passed, 0) &&
    typeof filters === 'string' &&
    typeof check === 'string'
  )
}

const isInteger = (value: unknown, min: number): value is number =>
  Number.isInteger(value) && (value as number) >= min && (value as number) <= INT32_MAX

/**
 * An instant as the list prints sort keys, and a real one (no 30 February, no year 0):
 * Postgres reads it back without an error.
 */
function isInstant(value: unknown): value is string {
  if (typeof value !== 'string' || !INSTANT.test(value)) return false
  const milliseconds = `${value.slice(0, 23)}Z`
  const date = new Date(milliseconds)
  return (
    !Number.isNaN(date.getTime()) &&
    date.toISOString() === milliseconds &&
    date.getUTCFullYear() >= 1
  )
}

/** The filters in a fixed order; numbers as JSON prints them, so 1.50 and 1.5 agree. */
const filterValues = ({ category, minPrice, maxPrice, search }: ProductFilters) => [
  category ?? null,
  minPrice ?? null,
  maxPrice ?? null,
  search ?? null,
]

const digest = (value: unknown) =>
  createHash('sha256').update(JSON.stringify(value)).digest('base64url').slice(0, 16)
