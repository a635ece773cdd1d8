import { setNewest } from '../newest-entries.js'
import type { RedisConnections } from './redis.js'

export interface AttemptBudgetSettings {
  /** Attempts each budget holds per window. */
  max: number
  windowMs: number
  /** With Redis the budgets are counted there, so every instance draws on the same ones. */
  redis: RedisConnections | undefined
}

/** A refused attempt: how long until the spent budget's window resets. */
export interface OverBudget {
  retryAfterSeconds: number
}

/**
 * What taking did: refused, taken (to give back if the attempt succeeds), or let through
 * uncounted while Redis is away or slow (nothing to give back).
 */
export type Taking = OverBudget | 'taken' | 'uncounted'

/**
 * Budgets of attempts. An attempt takes one from each budget it names before it runs, or
 * none when one is spent, so concurrent attempts cannot overdraw a budget; a caller that
 * counts only failures gives them back when the attempt succeeds (logins), and one that
 * counts every attempt keeps them (sign-ups). (The rate limiter counts every request, and
 * cannot look at a budget without drawing.)
 * While Redis is away or slow attempts are let through uncounted, as the rate limiter's
 * are.
 */
export function createAttemptBudgets(settings: AttemptBudgetSettings) {
  return settings.redis ? redisBudgets(settings, settings.redis) : memoryBudgets(settings)
}

export type AttemptBudgets = ReturnType<typeof createAttemptBudgets>

/** Every budget either takes one, or none does: one is spent (its reset in ms answered). */
const TAKE = `
for i, key in ipairs(KEYS) do
  if tonumber(redis.call('GET', key) or '0') >= tonumber(ARGV[1]) then
    return redis.call('PTTL', key)
  end
end
for i, key in ipairs(KEYS) do
  if redis.call('INCR', key) == 1 then redis.call('PEXPIRE', key, ARGV[2]) end
end
return -1`

/** A budget whose window has ended since is not brought back with no expiry. */
const GIVE_BACK = `
for i, key in ipairs(KEYS) do
  if tonumber(redis.call('GET', key) or '0') > 0 then redis.call('DECR', key) end
end`

function redisBudgets({ max, windowMs }: AttemptBudgetSettings, redis: RedisConnections) {
  const { commands } = redis
  return {
    async take(keys: readonly string[]): Promise<Taking> {
      if (!redis.answersInTime()) return 'uncounted'
      try {
        const resetMs = (await commands.eval(TAKE, keys.length, ...keys, max, windowMs)) as number
        return resetMs < 0 ? 'taken' : { retryAfterSeconds: Math.max(1, Math.ceil(resetMs / 1000)) }
      } catch {
        return 'uncounted'
      }
    },
    async giveBack(keys: readonly string[]): Promise<void> {
      await commands.eval(GIVE_BACK, keys.length, ...keys).catch(() => {})
    },
  }
}

/** As many budgets as the rate limiter's in-process store keeps. */
const BUDGETS_KEPT = 5000

function memoryBudgets({ max, windowMs }: AttemptBudgetSettings) {
  const budgets = new Map<string, { used: number; resetsAt: number }>()
  const live = (key: string) => {
    const budget = budgets.get(key)
    return budget && budget.resetsAt > Date.now() ? budget : undefined
  }
  return {
    async take(keys: readonly string[]): Promise<Taking> {
      for (const key of keys) {
        const budget = live(key)
        if (budget && budget.used >= max) {
          return {
            retryAfterSeconds: Math.max(1, Math.ceil((budget.resetsAt - Date.now()) / 1000)),
          }
        }
      }
      for (const key of keys) {
        const budget = live(key) ?? { used: 0, resetsAt: Date.now() + windowMs }
        budget.used += 1
        setNewest(budgets, key, budget, BUDGETS_KEPT)
      }
      return 'taken'
    },
    async giveBack(keys: readonly string[]): Promise<void> {
      for (const key of keys) {
        const budget = live(key)
        if (budget && budget.used > 0) budget.used -= 1
      }
    },
  }
}
