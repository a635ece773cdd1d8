// The GraphQL client of the catalog and chat service: the typed documents of
// operations.graphql (graphql-codegen's client preset writes ./generated/ when
// tools/build-sdk.ts builds the package), and a client that runs them.
export type { TypedDocumentNode } from '@graphql-typed-document-node/core'
export * from './client.js'
export * from './generated/graphql.js'
export { specVersion } from './generated/version.js'
