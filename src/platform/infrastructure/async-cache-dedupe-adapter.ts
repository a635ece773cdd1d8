/**
 * Where async-cache-dedupe 3.4.0 (pinned) keeps, in its storage, the entry of a defined
 * function `name` for the serialized key `key`: `<name>~<key>`. The read cache reads that
 * entry in the same Redis command as the versions it depends on, one round trip a hit,
 * and the library has no API that names an entry's storage key; no upstream issue asks
 * for one yet (searched 2026-12-03). test/read-cache.test.ts ("finds a hit in one command
 * …") fails if the format changes.
 */
export const storageKeyOf = (name: string, key: string) => `${name}~${key}`
