import DataLoader from 'dataloader'
import type { Resolvers, ResolversParentTypes } from '../../generated/graphql.js'
import type { GraphQLContext } from './context.js'

/** One use of a batched field: the parent it is resolved on and the field's arguments. */
export interface LoaderQuery<Parent, Args> {
  obj: Parent
  params: Args
}

/**
 * Resolves one field for many parents at once; answers in the order of `queries`.
 * Several uses may name the same parent: the loader must answer each.
 */
export type Loader<Parent, Args, Result, Context> = (
  queries: LoaderQuery<Parent, Args>[],
  context: Context,
) => Promise<Result[]>

/** Batched fields by type, as domain modules declare them (Mercurius's `loaders` shape). */
export type GraphQLLoaders = {
  [Type in keyof Resolvers & keyof ResolversParentTypes]?: Record<
    string,
    Loader<ResolversParentTypes[Type], Record<string, unknown>, unknown, GraphQLContext>
  >
}

type FieldResolver = (parent: unknown, args: unknown, context: LoaderContext) => Promise<unknown>

interface LoaderContext {
  loaders: LoaderSet
}

/** The resolvers that hand each batched field to the loader of its operation. */
export function loaderResolvers(
  loaders: GraphQLLoaders,
): Record<string, Record<string, FieldResolver>> {
  return Object.fromEntries(
    Object.entries(loaders).map(([type, fields]) => [
      type,
      Object.fromEntries(
        Object.keys(fields ?? {}).map((field): [string, FieldResolver] => [
          field,
          (obj, params, context) =>
            context.loaders.load(`${type}.${field}`, { obj, params }, context),
        ]),
      ),
    ]),
  )
}

export interface LoaderSet {
  /** `context` is the resolver's: Mercurius copies ours into contexts of its own. */
  load(field: string, query: LoaderQuery<unknown, unknown>, context: unknown): Promise<unknown>
}

/**
 * The batchers of one GraphQL context: the uses of a field made in the same tick go to
 * its loader as one call. Nothing is cached, because a subscription keeps its context
 * for every event it delivers and each event must read the data as it is then.
 */
export function createLoaderSet(loaders: GraphQLLoaders): LoaderSet {
  const batchers = new Map<string, DataLoader<LoaderQuery<unknown, unknown>, unknown>>()
  const batcherOf = (field: string, context: unknown) => {
    const existing = batchers.get(field)
    if (existing) return existing
    const [type = '', name = ''] = field.split('.')
    // The field's resolver was made from this very map, so its parents are the loader's.
    const loader = loaders[type as keyof GraphQLLoaders]?.[name] as
      | Loader<unknown, unknown, unknown, unknown>
      | undefined
    if (!loader) throw new Error(`No loader for ${field}`)
    const batcher = new DataLoader<LoaderQuery<unknown, unknown>, unknown>(
      async (queries) => loader([...queries], context),
      { cache: false },
    )
    batchers.set(field, batcher)
    return batcher
  }
  return { load: (field, query, context) => batcherOf(field, context).load(query) }
}
