import type { FastifyInstance, FastifyRequest } from 'fastify'
import { type DocumentNode, type ExecutionArgs, getOperationAST } from 'graphql'
import type { SpanEnd, Tracing } from '../platform/telemetry/tracing.js'

type OperationSpans = Pick<Tracing, 'startOperation'>

/** The operation's type and name, as the semantic conventions' attributes want them. */
function operationOf(document: DocumentNode, operationName: string | null | undefined) {
  const operation = getOperationAST(document, operationName ?? undefined)
  return { type: operation?.operation ?? 'unknown', name: operation?.name?.value }
}

function operationNameOf(request: FastifyRequest) {
  const { operationName } = (request.body ?? request.query ?? {}) as { operationName?: unknown }
  return typeof operationName === 'string' ? operationName : undefined
}

/**
 * A span per operation over HTTP, from Mercurius's hooks: from its execution's start,
 * once the service's checks have passed, to its resolution.
 */
export function traceHttpOperations(app: FastifyInstance, tracing: OperationSpans) {
  const running = new WeakMap<object, SpanEnd>()
  app.graphql.addHook('preExecution', async (_schema, document, context) => {
    const { type, name } = operationOf(document, operationNameOf(context.reply.request))
    running.set(context, tracing.startOperation(type, name))
  })
  app.graphql.addHook('onResolution', async (execution, context) => {
    running.get(context)?.(execution.errors?.[0])
    running.delete(context)
  })
}

/** Runs a WebSocket operation's execution (or a subscription's start) in its span. */
export function tracedExecution(tracing: OperationSpans | undefined) {
  if (!tracing) return <Result>(_args: ExecutionArgs, run: () => Result) => run()
  return <Result>(args: ExecutionArgs, run: () => Result): Result => {
    const { type, name } = operationOf(args.document, args.operationName)
    const end = tracing.startOperation(type, name)
    let result: Result
    try {
      result = run()
    } catch (error) {
      end(error)
      throw error
    }
    if (!(result instanceof Promise)) {
      end()
      return result
    }
    return result.then(
      (value) => {
        end()
        return value
      },
      (error) => {
        end(error)
        throw error
      },
    ) as Result
  }
}
