import { describe, expect, it } from 'vitest'
import { jsonString } from '../src/platform/json-text.js'

/** Strings written by hand into JSON (the request line's) must be what JSON.stringify writes. */

describe('jsonString', () => {
  it('writes every character as JSON.stringify does', () => {
    const everyCode = Array.from({ length: 0x3000 }, (_, code) => String.fromCharCode(code))
    const awkward = ['', 'plain', 'a"b', 'back\\slash', 'tab\there', 'é', '\u2028', '\ud800', '😀']
    for (const text of [...everyCode, ...awkward, everyCode.join('')]) {
      expect(jsonString(text)).toBe(JSON.stringify(text))
    }
  })
})
