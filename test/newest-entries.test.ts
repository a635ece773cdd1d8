import { describe, expect, it } from 'vitest'
import { setNewest } from '../src/platform/newest-entries.js'

describe('setNewest', () => {
  it('keeps at most `capacity` entries, forgetting the oldest first', () => {
    const map = new Map<string, number>()
    for (const [index, key] of ['a', 'b', 'c', 'd'].entries()) setNewest(map, key, index, 3)
    expect([...map]).toEqual([
      ['b', 1],
      ['c', 2],
      ['d', 3],
    ])
  })

  it('makes a key set again the newest, without forgetting another', () => {
    const map = new Map([
      ['a', 0],
      ['b', 1],
    ])
    setNewest(map, 'a', 2, 2)
    expect([...map]).toEqual([
      ['b', 1],
      ['a', 2],
    ])
    setNewest(map, 'c', 3, 2)
    expect([...map.keys()]).toEqual(['a', 'c'])
  })
})
