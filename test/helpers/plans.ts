import { type SQL, sql } from 'drizzle-orm'
import type { Executor } from '../../src/db/database.js'
import { rowsOf } from '../../src/db/statement-rows.js'

export interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Index Name'?: string
  /** The conditions an index scan answers from the index itself. */
  'Index Cond'?: string
  /** What the node gives the one above it: with `verbose` only. */
  Output?: string[]
  Plans?: PlanNode[]
}

const flatten = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(flatten)]

/** Every node of the plan Postgres picks for a statement, outermost first. */
export async function planNodesOf(
  db: Executor,
  query: SQL | { getSQL(): SQL },
  { verbose = false } = {},
): Promise<PlanNode[]> {
  const options = verbose ? sql`(verbose, format json)` : sql`(format json)`
  const rows = rowsOf<Record<string, unknown>>(await db.execute(sql`explain ${options} ${query}`))
  const plan = Object.values(rows[0] ?? {})[0]
  // postgres.js parses the JSON; PGlite gives its text.
  const [{ Plan }] = (typeof plan === 'string' ? JSON.parse(plan) : plan) as [{ Plan: PlanNode }]
  return flatten(Plan)
}
