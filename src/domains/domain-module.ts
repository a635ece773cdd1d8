import type { FastifyBaseLogger } from 'fastify'
import type { Resolvers } from '../../generated/graphql.js'
import type { Config } from '../config.js'
import type { DatabaseHandle } from '../db/database.js'
import type { GraphQLLoaders } from '../graphql/loaders.js'
import type { SocketObserver } from '../graphql/websocket/socket-seats.js'
import type { OperationId, ServiceHandlers } from '../http/operations.js'
import type { AccessTokens } from '../platform/infrastructure/access-tokens.js'
import type { DeviceTokens } from '../platform/infrastructure/device-tokens.js'
import type { Drain } from '../platform/infrastructure/drain.js'
import type { EventBus } from '../platform/infrastructure/events.js'
import type { ServiceMetrics } from '../platform/infrastructure/metrics.js'
import type { Outbox } from '../platform/infrastructure/outbox.js'
import type { ReadCache } from '../platform/infrastructure/read-cache.js'
import type { RecentWrites } from '../platform/infrastructure/recent-writes.js'
import type { RedisConnections } from '../platform/infrastructure/redis.js'
import type { SessionAnnouncements } from '../platform/infrastructure/session-announcements.js'
import type { ResolveHost } from './webhooks/webhook-targets.js'

/** What every domain may be built from: the outside world, made once in buildApp. */
export interface Infrastructure {
  database: DatabaseHandle
  events: EventBus
  /** Where a change records the events it must not lose, in its own transaction. */
  outbox: Pick<Outbox, 'enqueue' | 'publish' | 'traceparent' | 'tap'>
  /** Present when REDIS_URL is set: the shared clients, for stores that span instances. */
  redis: RedisConnections | undefined
  /** Reads shared by the instances (Redis) or kept in this process, invalidated on writes. */
  readCache: ReadCache
  /** Present with a read replica: who wrote lately, whose reads must see it. */
  recentWrites: RecentWrites | undefined
  config: Config
  log: FastifyBaseLogger
  accessTokens: AccessTokens
  /** Issued at login: a client's later logins are budgeted per device (credential-limits.ts). */
  deviceTokens: DeviceTokens
  /** How the end of an account's sessions reaches every instance at once. */
  sessionAnnouncements: Pick<SessionAnnouncements, 'record' | 'announce'>
  /** Whether this instance is leaving its load balancer's pool before it closes. */
  drain: Pick<Drain, 'draining'>
  /** This instance among the others: new at each start. */
  instanceId: string
  /** What this instance measures of itself (requests, event loop, process). */
  metrics: ServiceMetrics
  /** How host names of outgoing connections resolve (webhook targets); tests stub it. */
  resolveHost: ResolveHost
}

type RootType = 'Query' | 'Mutation' | 'Subscription'

/** A domain's share of the resolver map: any types, any of their fields. */
export type DomainResolvers = { [Type in keyof Resolvers]?: Partial<NonNullable<Resolvers[Type]>> }

/**
 * One domain: the REST operations and GraphQL fields it answers, and the background
 * work it runs while the server is up (`start` on ready, `stop` on close).
 */
export interface DomainModule {
  name: string
  handlers?: Partial<ServiceHandlers>
  resolvers?: DomainResolvers
  loaders?: GraphQLLoaders
  /** Told of each GraphQL WebSocket's life and of the user it belongs to. */
  sockets?: SocketObserver
  start?(): Promise<void>
  stop?(): Promise<void>
}

// Each distributes over a union of modules: the names any one of them claims.
type OperationsOf<M> = M extends { handlers: infer H } ? keyof H : never
type RootFieldsOf<M> = M extends { resolvers: infer R }
  ? { [Type in RootType & keyof R]: `${Type}.${keyof R[Type] & string}` }[RootType & keyof R]
  : never

/** Names claimed by more than one module of the list, `Seen` being those of earlier ones. */
type ClaimedTwice<
  Modules extends readonly unknown[],
  ClaimsOf extends 'handlers' | 'root fields',
  Seen = never,
> = Modules extends readonly [infer Head, ...infer Rest]
  ? (Seen & Claims<Head, ClaimsOf>) | ClaimedTwice<Rest, ClaimsOf, Seen | Claims<Head, ClaimsOf>>
  : never
type Claims<M, ClaimsOf> = ClaimsOf extends 'handlers' ? OperationsOf<M> : RootFieldsOf<M>

type AllRootFields = {
  [Type in RootType]: `${Type}.${keyof NonNullable<Resolvers[Type]> & string}`
}[RootType]

/**
 * The compiler's proof that a module list is complete: every operation of openapi.yaml
 * and every root field of schema.graphql has exactly one module that answers it. When
 * one does not, the error names it.
 */
type Complete<Modules extends readonly unknown[]> = [
  | Exclude<OperationId, OperationsOf<Modules[number]>>
  | ClaimedTwice<Modules, 'handlers'>
  | Exclude<AllRootFields, RootFieldsOf<Modules[number]>>
  | ClaimedTwice<Modules, 'root fields'>,
] extends [never]
  ? Modules
  : {
      operationsWithoutHandler: Exclude<OperationId, OperationsOf<Modules[number]>>
      operationsClaimedTwice: ClaimedTwice<Modules, 'handlers'>
      rootFieldsWithoutResolver: Exclude<AllRootFields, RootFieldsOf<Modules[number]>>
      rootFieldsClaimedTwice: ClaimedTwice<Modules, 'root fields'>
    }

/** The module list, accepted by the compiler only when it is complete (see `Complete`). */
export function completeModules<const Modules extends readonly DomainModule[]>(
  modules: Modules & Complete<Modules>,
): Modules {
  return modules
}

export interface AssembledModules {
  handlers: ServiceHandlers
  resolvers: Resolvers & Required<Pick<Resolvers, RootType>>
  loaders: GraphQLLoaders
  socketObservers: SocketObserver[]
}

/**
 * Merges the modules' handlers, resolvers and loaders, field by field. Two modules
 * answering one operationId or one GraphQL field is a wiring mistake: it stops the start
 * instead of letting the later one win.
 */
export function assembleModules(modules: readonly DomainModule[]): AssembledModules {
  const owners = new Map<string, string>()
  const claim = (name: string, module: DomainModule) => {
    const owner = owners.get(name)
    if (owner) throw new Error(`${name} is claimed by both the ${owner} and ${module.name} modules`)
    owners.set(name, module.name)
  }
  const handlers: Record<string, unknown> = {}
  const resolvers: Record<string, Record<string, unknown>> = {}
  const loaders: Record<string, Record<string, unknown>> = {}
  for (const module of modules) {
    for (const [operationId, handler] of Object.entries(module.handlers ?? {})) {
      claim(`operation ${operationId}`, module)
      handlers[operationId] = handler
    }
    for (const [merged, fieldMaps] of [
      [resolvers, module.resolvers],
      [loaders, module.loaders],
    ] as const) {
      for (const [type, fields] of Object.entries(fieldMaps ?? {})) {
        for (const [field, resolver] of Object.entries(fields ?? {})) {
          claim(`GraphQL field ${type}.${field}`, module)
          merged[type] = { ...merged[type], [field]: resolver }
        }
      }
    }
  }
  // completeModules has proven at compile time what these casts assert.
  return {
    handlers: handlers as ServiceHandlers,
    resolvers: resolvers as AssembledModules['resolvers'],
    loaders: loaders as GraphQLLoaders,
    socketObservers: modules.flatMap((module) => (module.sockets ? [module.sockets] : [])),
  }
}
