import { unauthenticated } from '../errors.js'
import { setNewest } from '../newest-entries.js'
import type { TokenPrincipal } from './access-tokens.js'

/**
 * How long a lookup's answer is believed. An account deleted outside the API (a row
 * removed in SQL) stops authenticating within this and one lookup; §13 allows 3 s.
 * Sessions ended through the API are heard of at once (sessionsEnded), on every instance.
 */
const BELIEVED_MS = 2000
/** Ids of callers seen lately: a few hundred kilobytes at most. */
const ACCOUNTS_KEPT = 10_000
/** The version of an account that is gone: above every token's. */
const GONE = Number.POSITIVE_INFINITY

export const accountGone = () => unauthenticated('The account of this token no longer exists')
const sessionEnded = () =>
  unauthenticated('The session of this token has ended: sign in again for a new one')

/** Told when an account's sessions older than `sessionVersion` end. */
export type SessionsEndedListener = (userId: number, sessionVersion: number) => void

/**
 * Whether the account a verified token names still exists, and the token's session is
 * still its current one: a signature outlives its account and its session. Each
 * instance keeps what it learnt for BELIEVED_MS, so a caller's requests ask the database
 * once per window, and concurrent first requests share one lookup. `sessionVersionOf`
 * answers the account's session version, undefined when there is no such account.
 */
export function createLiveAccounts(
  sessionVersionOf: (userId: number) => Promise<number | undefined>,
) {
  const answers = new Map<number, { version: number; askedAt: number }>()
  const lookups = new Map<number, Promise<number>>()
  const listeners: SessionsEndedListener[] = []

  // Versions only rise: an answer never lowers what an announcement taught, even a
  // lookup that began before the announcement and ended after it.
  function learn(userId: number, version: number, askedAt: number) {
    const known = answers.get(userId)?.version ?? -1
    setNewest(answers, userId, { version: Math.max(known, version), askedAt }, ACCOUNTS_KEPT)
  }

  function lookUp(userId: number): Promise<number> {
    let lookup = lookups.get(userId)
    if (lookup) return lookup
    // The time it was asked, not answered: the answer may be as old as that.
    const askedAt = Date.now()
    lookup = sessionVersionOf(userId)
      .then((found) => {
        learn(userId, found ?? GONE, askedAt)
        return answers.get(userId)?.version ?? GONE
      })
      .finally(() => lookups.delete(userId))
    lookups.set(userId, lookup)
    return lookup
  }

  function admitted<Principal extends TokenPrincipal>(principal: Principal, version: number) {
    if (version === GONE) throw accountGone()
    if (principal.sessionVersion < version) throw sessionEnded()
    return principal
  }

  return {
    /**
     * The principal while its account exists and its session is current, at once while
     * the last answer is fresh; otherwise UNAUTHENTICATED. Only a stale or missing answer
     * costs a lookup.
     */
    confirm<Principal extends TokenPrincipal>(
      principal: Principal,
    ): Principal | Promise<Principal> {
      const answer = answers.get(principal.userId)
      if (answer && Date.now() - answer.askedAt < BELIEVED_MS) {
        return admitted(principal, answer.version)
      }
      return lookUp(principal.userId).then((version) => admitted(principal, version))
    },

    /** Every session of the account older than `sessionVersion` has ended (an announcement). */
    sessionsEnded(userId: number, sessionVersion: number): void {
      learn(userId, sessionVersion, Date.now())
      for (const listener of listeners) listener(userId, sessionVersion)
    },

    /** Tells `listener` of each announcement, as it is heard. */
    onSessionsEnded(listener: SessionsEndedListener): void {
      listeners.push(listener)
    },
  }
}

export type LiveAccounts = ReturnType<typeof createLiveAccounts>
