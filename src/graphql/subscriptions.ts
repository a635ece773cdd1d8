import type { GraphQLFieldResolver, GraphQLSchema } from 'graphql'
import type { Resolvers } from '../../generated/graphql.js'
import type { EventBus, Topic } from '../platform/infrastructure/events.js'
import type { GraphQLContext } from './context.js'

/** Events held for one subscriber before it counts as too slow and is cut off. */
const MAX_QUEUED_EVENTS = 1000

/** A subscriber's events of one topic; one that falls too far behind loses its socket. */
export function followTopic<Event>(
  events: Pick<EventBus, 'subscribe'>,
  topic: Topic<Event>,
  context: Pick<GraphQLContext, 'closeSlowConsumer'>,
) {
  return events.subscribe(topic, {
    maxQueued: MAX_QUEUED_EVENTS,
    onOverflow: () => context.closeSlowConsumer?.(),
  })
}

type SubscriptionField = {
  subscribe: (root: unknown, args: unknown, context: GraphQLContext, info: unknown) => unknown
  resolve?: GraphQLFieldResolver<unknown, GraphQLContext>
}

/**
 * The schema with its subscription fields' resolvers, each subscription counted against
 * its socket's live subscriptions. Mercurius, which serves only HTTP here, would wire
 * them only with its own WebSocket server; they are given to the schema's fields as
 * graphql-js reads them, as graphql-tools' addResolversToSchema does.
 */
export function withSubscriptions(
  schema: GraphQLSchema,
  resolvers: Resolvers['Subscription'],
): GraphQLSchema {
  const fields = schema.getSubscriptionType()?.getFields() ?? {}
  for (const [name, resolver] of Object.entries(
    (resolvers ?? {}) as Record<string, SubscriptionField>,
  )) {
    const field = fields[name]
    if (!field) throw new Error(`schema.graphql has no field Subscription.${name}`)
    field.subscribe = (root, args, context: GraphQLContext, info) => {
      const start = async () =>
        (await resolver.subscribe(root, args, context, info)) as AsyncIterator<unknown>
      return context.subscriptions ? context.subscriptions.open(start) : start()
    }
    if (resolver.resolve) field.resolve = resolver.resolve
  }
  return schema
}
