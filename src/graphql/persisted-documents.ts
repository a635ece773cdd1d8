import { GraphQLError } from 'graphql'
import { isRecord } from '../platform/input-rules.js'
import type { PersistedQueryStore } from './persisted-query-store.js'
import { documentHash, hexHash, sha256Hex, type TrustedDocuments } from './trusted-documents.js'

/** What names a request's document, over HTTP (body or query string) or in a WebSocket message. */
export interface DocumentRequest {
  query?: unknown
  documentId?: unknown
  extensions?: unknown
}

/** A document sent with its hash, kept once it has passed every check. */
export interface Registration {
  hash: string
  query: string
}

/**
 * The text to run (undefined: the request named none, and is refused as any such), or the
 * refusal with its HTTP status, decided before anything is parsed.
 */
export type Resolution =
  | { query: string | undefined; registration?: Registration }
  | { refused: GraphQLError; status: 200 | 400 }

const refusal = (status: 200 | 400, code: string, message: string): Resolution => ({
  refused: new GraphQLError(message, { extensions: { code } }),
  status,
})

/** Apollo's answers, which its persisted-queries link reads by message and by code. */
const NOT_FOUND = refusal(200, 'PERSISTED_QUERY_NOT_FOUND', 'PersistedQueryNotFound')
const MISMATCH = refusal(
  400,
  'PERSISTED_QUERY_HASH_MISMATCH',
  'extensions.persistedQuery.sha256Hash is not the SHA-256 of the query sent with it',
)
const NOT_TRUSTED = refusal(
  200,
  'DOCUMENT_NOT_TRUSTED',
  'Only trusted documents run on this server, and this document is not one of them',
)
const invalid = (message: string) => refusal(400, 'PERSISTED_QUERY_INVALID', message)

const textOf = (query: unknown) => (typeof query === 'string' && query !== '' ? query : undefined)

/** The hash a request names its document by, if any; a malformed one is refused. */
function namedHash({ query, documentId, extensions }: DocumentRequest) {
  const persisted = isRecord(extensions) ? extensions.persistedQuery : undefined
  if (documentId != null) {
    if (persisted != null || textOf(query) !== undefined) {
      return invalid('documentId names the document alone: send no query or persistedQuery with it')
    }
    return (
      documentHash(documentId) ??
      invalid('documentId must be a SHA-256: 64 hex digits, with or without "sha256:" before them')
    )
  }
  if (persisted == null) return undefined
  if (!isRecord(persisted) || persisted.version !== 1) {
    return invalid('extensions.persistedQuery must be { "version": 1, "sha256Hash": "<hex>" }')
  }
  return (
    hexHash(persisted.sha256Hash) ??
    invalid('extensions.persistedQuery.sha256Hash must be 64 hex digits: the SHA-256 of the query')
  )
}

export interface PersistedDocumentsOptions {
  /** GRAPHQL_TRUSTED_DOCUMENTS: only these run, and nothing is registered. */
  trusted: TrustedDocuments | undefined
  store: PersistedQueryStore
}

/**
 * Automatic persisted queries (Apollo's protocol) and trusted documents, for HTTP and
 * both WebSocket subprotocols alike: which text a request runs, or why it runs none.
 * Everything here is a lookup by hash or by exact text, so a refused document costs no
 * parse; a registration is kept only once the document has passed every check (as Apollo
 * Server does), so the store holds no document the service refuses.
 */
export function createPersistedDocuments({ trusted, store }: PersistedDocumentsOptions) {
  function trustedOnly(text: string | undefined, hash: string | undefined): Resolution {
    if (text !== undefined) {
      if (!trusted?.texts.has(text)) return NOT_TRUSTED
      return hash === undefined || sha256Hex(text) === hash ? { query: text } : MISMATCH
    }
    if (hash === undefined) return { query: undefined }
    const query = trusted?.byHash.get(hash)
    return query === undefined ? NOT_TRUSTED : { query }
  }

  async function automatic(text: string | undefined, hash: string | undefined) {
    if (hash === undefined) return { query: text }
    if (text === undefined) {
      const query = await store.get(hash)
      return query === undefined ? NOT_FOUND : { query }
    }
    if (sha256Hex(text) !== hash) return MISMATCH
    return { query: text, registration: { hash, query: text } }
  }

  return {
    async resolve(request: DocumentRequest): Promise<Resolution> {
      const hash = namedHash(request)
      if (typeof hash === 'object') return hash
      const text = textOf(request.query)
      return trusted ? trustedOnly(text, hash) : automatic(text, hash)
    },

    /** Keeps a registration once its operation has passed every check. */
    register: (registration: Registration | undefined) =>
      registration ? store.set(registration.hash, registration.query) : undefined,
  }
}

export type PersistedDocuments = ReturnType<typeof createPersistedDocuments>
