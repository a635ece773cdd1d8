import { describe, expect, it } from 'vitest'
import { createValidatorCompiler } from '../src/platform/plugins/validation.js'

/**
 * openapi.yaml bounds its int32 fields with `maximum` as well (the OWASP lint asks for
 * it), so the REST suites alone cannot tell whether the format itself holds the bound.
 */
describe('the int32 format', () => {
  const compile = createValidatorCompiler()
  const schema = { type: 'object', properties: { n: { type: 'integer', format: 'int32' } } }
  const body = compile({ schema, httpPart: 'body', method: 'POST', url: '/' })
  // Paths and query strings are coerced from text first.
  const params = compile({ schema, httpPart: 'params', method: 'GET', url: '/' })

  it.each([0, 2 ** 31 - 1, -(2 ** 31)])('accepts %d', (n) => {
    expect(body({ n })).toBe(true)
    expect(params({ n: String(n) })).toBe(true)
  })

  it.each([2 ** 31, -(2 ** 31) - 1, 2 ** 53])('rejects %d', (n) => {
    expect(body({ n })).toBe(false)
    expect(params({ n: String(n) })).toBe(false)
  })
})
