import { unauthenticated } from '../errors.js'
import { setNewest } from '../newest-entries.js'
import type { Principal } from './access-tokens.js'

/**
 * How long a lookup's answer is believed. An account deleted outside the API (a row
 * removed in SQL) stops authenticating within this and one lookup; §13 allows 3 s.
 */
const BELIEVED_MS = 2000
/** Ids of callers seen lately: a few hundred kilobytes at most. */
const ACCOUNTS_KEPT = 10_000

export const accountGone = () => unauthenticated('The account of this token no longer exists')

/**
 * Whether the account a verified token names still exists: a signature outlives its
 * account, and a request on behalf of no one failed deep inside (a foreign key) with a
 * 500. Each instance keeps what it learnt for BELIEVED_MS, so a caller's requests ask the
 * database once per window, and concurrent first requests share one lookup.
 */
export function createLiveAccounts(exists: (userId: number) => Promise<boolean>) {
  const answers = new Map<number, { exists: boolean; askedAt: number }>()
  const lookups = new Map<number, Promise<boolean>>()

  function lookUp(userId: number): Promise<boolean> {
    let lookup = lookups.get(userId)
    if (lookup) return lookup
    // The time it was asked, not answered: the answer may be as old as that.
    const askedAt = Date.now()
    lookup = exists(userId)
      .then((found) => {
        setNewest(answers, userId, { exists: found, askedAt }, ACCOUNTS_KEPT)
        return found
      })
      .finally(() => lookups.delete(userId))
    lookups.set(userId, lookup)
    return lookup
  }

  return {
    /**
     * The principal while its account exists, at once while the last answer is fresh;
     * a gone account is UNAUTHENTICATED. Only a stale or missing answer costs a lookup.
     */
    confirm(principal: Principal): Principal | Promise<Principal> {
      const answer = answers.get(principal.userId)
      if (answer && Date.now() - answer.askedAt < BELIEVED_MS) {
        if (answer.exists) return principal
        throw accountGone()
      }
      return lookUp(principal.userId).then((found) => {
        if (!found) throw accountGone()
        return principal
      })
    },
  }
}

export type LiveAccounts = ReturnType<typeof createLiveAccounts>
