/**
 * Sets `key` as the map's newest entry; when that would pass `capacity`, the oldest entry
 * goes first. A Map keeps insertion order, so its first key is the oldest: a bound on the
 * memory of what is remembered, with none of an LRU's bookkeeping on reads.
 */
export function setNewest<Key, Value>(
  map: Map<Key, Value>,
  key: Key,
  value: Value,
  capacity: number,
): void {
  map.delete(key)
  if (map.size >= capacity) map.delete(map.keys().next().value as Key)
  map.set(key, value)
}
