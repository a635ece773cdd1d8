import type { FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify'
import type { PersistedDocuments, Registration } from './persisted-documents.js'

type Parameters = Record<string, unknown>

/** A GET's extensions are JSON in the query string; Mercurius answers one that is not. */
function parsedExtensions(extensions: unknown) {
  if (typeof extensions !== 'string') return extensions
  try {
    return JSON.parse(extensions) as unknown
  } catch {
    return undefined
  }
}

/**
 * persisted-documents.ts over HTTP, in front of Mercurius rather than through its
 * persistedQueryProvider (docs/decisions/persisted-documents.md): before Mercurius's
 * handler reads the request, a hash is swapped for its document's text, or the request
 * is answered with its refusal, unparsed; a registration waits for the checks Mercurius
 * runs before execution.
 */
export function persistedDocumentsOverHttp(documents: PersistedDocuments) {
  const pending = new WeakMap<FastifyRequest, Registration>()

  const preHandler: preHandlerAsyncHookHandler = async (
    request: FastifyRequest,
    reply: FastifyReply,
  ) => {
    // A request Mercurius's schema refused is Mercurius's to answer.
    if (request.validationError) return
    const posted = request.method === 'POST'
    const parameters = (posted ? request.body : request.query) as Parameters
    if (typeof parameters !== 'object' || parameters === null) return
    const resolution = await documents.resolve({
      query: parameters.query,
      documentId: parameters.documentId,
      extensions: posted ? parameters.extensions : parsedExtensions(parameters.extensions),
    })
    if ('refused' in resolution) {
      return reply.code(resolution.status).send({ errors: [resolution.refused.toJSON()] })
    }
    if (resolution.query !== undefined) parameters.query = resolution.query
    if (resolution.registration) pending.set(request, resolution.registration)
  }

  return {
    preHandler,
    /** Keeps the request's registration, if any: its operation passed every check. */
    passed: (request: FastifyRequest) => documents.register(pending.get(request)),
  }
}
