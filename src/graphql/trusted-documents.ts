import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { isRecord } from '../platform/input-rules.js'

/** The documents of GRAPHQL_TRUSTED_DOCUMENTS: nothing else runs while it is set. */
export interface TrustedDocuments {
  /** By SHA-256, lower-case hex. */
  byHash: ReadonlyMap<string, string>
  texts: ReadonlySet<string>
}

export const sha256Hex = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')

const SHA256_HEX = /^[0-9a-fA-F]{64}$/

/** A SHA-256 in hex, as extensions.persistedQuery.sha256Hash carries it; lower-cased. */
export const hexHash = (value: unknown) =>
  typeof value === 'string' && SHA256_HEX.test(value) ? value.toLowerCase() : undefined

/**
 * A SHA-256 as graphql-codegen's client preset writes it, in its manifest's keys and its
 * documents' `documentId`: `sha256:` before the hex (the GraphQL over HTTP proposal's
 * form), or the hex alone.
 */
export const documentHash = (value: unknown) =>
  hexHash(typeof value === 'string' && value.startsWith('sha256:') ? value.slice(7) : value)

/**
 * Reads a manifest, `{ "<sha256>": "<document>" }` (the client preset's
 * persisted-documents.json); throws, in words, at the first thing wrong with it.
 */
export function readTrustedDocuments(path: string): TrustedDocuments {
  let source: string
  try {
    source = readFileSync(path, 'utf8')
  } catch (error) {
    throw new Error(`cannot be read (${(error as NodeJS.ErrnoException).code}): ${path}`)
  }
  let manifest: unknown
  try {
    manifest = JSON.parse(source)
  } catch {
    throw new Error(`is not JSON: ${path}`)
  }
  if (!isRecord(manifest)) {
    throw new Error(`must hold a JSON object { "<sha256 hex>": "<document>" }: ${path}`)
  }
  const byHash = new Map<string, string>()
  for (const [key, document] of Object.entries(manifest)) {
    const hash = documentHash(key)
    if (hash === undefined) {
      throw new Error(`has a key that is not a SHA-256 in hex (64 hex digits): "${key}"`)
    }
    if (typeof document !== 'string') throw new Error(`has a document that is not text: "${key}"`)
    if (sha256Hex(document) !== hash) {
      throw new Error(`has a key that is not the SHA-256 of its document: "${key}"`)
    }
    byHash.set(hash, document)
  }
  return { byHash, texts: new Set(byHash.values()) }
}
