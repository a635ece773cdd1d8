// Checked by `tsc` (make typecheck), not run: the compiler must refuse a module list
// that leaves an operation or a root field unanswered, or answers one twice. Should it
// ever accept one of these, the unused @ts-expect-error fails the type check.
import { completeModules, type Infrastructure } from '../../src/domains/domain-module.js'
import { createDomainModules } from '../../src/domains/module-list.js'

export function moduleListChecks(infrastructure: Infrastructure) {
  const [health, auth, users, catalog, chat, ...rest] = createDomainModules(infrastructure)
  // @ts-expect-error -- the chat module is missing: Query.messages has no resolver.
  completeModules([health, auth, users, catalog, ...rest])
  // @ts-expect-error -- the catalog module is missing: listProducts has no handler.
  completeModules([health, auth, users, chat, ...rest])
  // @ts-expect-error -- health twice: getHealth and getReadiness are answered twice.
  completeModules([health, health, auth, users, catalog, chat, ...rest])
  return completeModules([health, auth, users, catalog, chat, ...rest])
}
