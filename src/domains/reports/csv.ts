import { Readable } from 'node:stream'

export type CsvCell = string | number | null | undefined

/** A spreadsheet runs a cell starting with one of these as a formula (CSV injection). */
const FORMULA_START = /^[=+\-@\t\r]/
const NEEDS_QUOTES = /[",\r\n]/

/**
 * One field of RFC 4180: quoted when it holds a quote, comma or line break, with inner
 * quotes doubled. Text a spreadsheet would run as a formula gets a leading `'` (numbers,
 * negative ones included, are written as they are).
 */
export function csvField(cell: CsvCell): string {
  if (cell === null || cell === undefined) return ''
  if (typeof cell === 'number') return String(cell)
  const text = FORMULA_START.test(cell) ? `'${cell}` : cell
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

export const csvRecord = (cells: readonly CsvCell[]) => `${cells.map(csvField).join(',')}\r\n`

/** A header row and then each row, as a stream that encodes rows as it is read. */
export function csvStream(header: readonly string[], rows: Iterable<readonly CsvCell[]>): Readable {
  function* records() {
    yield csvRecord(header)
    for (const row of rows) yield csvRecord(row)
  }
  return Readable.from(records(), { objectMode: false })
}
