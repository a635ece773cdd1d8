/**
 * Session settings of every connection, on both drivers.
 *
 * No plan_cache_mode: a list statement must be planned for its values (a generic plan
 * cannot use the trigram or price indexes for them, and measured much slower), and it
 * is, being sent unnamed; so are drizzle's other statements, which Postgres plans for
 * their values until a generic plan looks as cheap.
 */
export const PLANNER_SETTINGS = {
  // Pages sit in memory or on SSD, where a random read costs about a sequential one;
  // at the default 4 the planner counts the list's total with a scan of the table
  // instead of an index-only scan.
  random_page_cost: '1.1',
}

/**
 * The sessions prepareRows' statements run in, on Postgres: each is planned once, for any
 * values, and the plan kept. Left to choose, Postgres planned the chat list anew at every
 * call, because a plan for the chat at hand looked cheaper than one for any chat; that
 * planning was a large share of Postgres's CPU for a list. The generic plans are
 * the ones these statements are written for (messages-plans.test.ts checks the chat
 * list's).
 */
export const PREPARED_SETTINGS = { ...PLANNER_SETTINGS, plan_cache_mode: 'force_generic_plan' }
