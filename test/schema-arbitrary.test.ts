import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createValidatorCompiler } from '../src/platform/plugins/validation.js'
import { specification } from './helpers/contract.js'
import { brokenRules, fieldsBreakingRules } from './helpers/fuzz/documented-rules.js'
import { invalidParameterTexts } from './helpers/fuzz/parameter-texts.js'
import { restOperations } from './helpers/fuzz/rest-operations.js'
import { invalidValues } from './helpers/invalid-values.js'
import { type JsonSchema, validValues } from './helpers/schema-arbitrary.js'

/**
 * The fuzz suites are only as good as their generators: here, without a server, every
 * value the converter makes from openapi.yaml fits its schema as the service validates
 * it, and every mutant breaks the schema or a rule the spec states.
 */

const RUNS = 300
const SEED = 7

const compile = createValidatorCompiler()
const serviceValidator = (schema: object, httpPart: 'body' | 'querystring' | 'headers') =>
  compile({ schema, httpPart, method: 'POST', url: '/' }) as unknown as ((
    data: unknown,
  ) => boolean) & {
    errors?: unknown
  }

const bodies = restOperations.flatMap((operation) =>
  operation.body ? [[operation.operationId, operation.body] as const] : [],
)
const parameters = [
  ...new Map(
    restOperations.flatMap((operation) =>
      operation.parameters.map(
        (parameter) => [`${parameter.in} ${parameter.name}`, parameter] as const,
      ),
    ),
  ).entries(),
]

describe('values generated from openapi.yaml', () => {
  it.each(bodies)('fit the body of %s as the service validates it', (_, schema) => {
    const validate = serviceValidator(schema, 'body')
    fc.assert(
      fc.property(validValues(schema), (value) => {
        expect(validate(value), JSON.stringify(validate.errors)).toBe(true)
      }),
      { numRuns: RUNS, seed: SEED },
    )
  })

  it.each(parameters)('fit the parameter %s, sent as text', (_, parameter) => {
    const httpPart = parameter.in === 'header' ? 'headers' : 'querystring'
    const name = parameter.in === 'header' ? parameter.name.toLowerCase() : parameter.name
    const validate = serviceValidator(
      { type: 'object', properties: { [parameter.name]: parameter.schema } },
      httpPart,
    )
    fc.assert(
      fc.property(validValues(parameter.schema), (value) => {
        expect(validate({ [name]: String(value) }), JSON.stringify(validate.errors)).toBe(true)
      }),
      { numRuns: RUNS, seed: SEED },
    )
  })

  it.each(Object.entries(specification.components.schemas))(
    'fit components.schemas.%s',
    (_, schema) => {
      const validate = serviceValidator(schema, 'body')
      fc.assert(
        fc.property(validValues(schema as JsonSchema), (value) => {
          expect(validate(value), JSON.stringify(validate.errors)).toBe(true)
        }),
        { numRuns: 100, seed: SEED },
      )
    },
  )
})

describe('mutants of openapi.yaml values', () => {
  it.each(bodies)('of the body of %s are refused, or break a documented rule', (_, schema) => {
    const validate = serviceValidator(schema, 'body')
    fc.assert(
      fc.property(invalidValues(schema), ({ value, flaw }) => {
        const breaksRule =
          typeof value === 'object' &&
          value !== null &&
          fieldsBreakingRules(schema.properties ?? {}, value as Record<string, unknown>).length > 0
        expect(!validate(value) || breaksRule, `accepted: ${flaw}`).toBe(true)
      }),
      { numRuns: RUNS, seed: SEED },
    )
  })

  it.each(parameters)(
    'of the parameter %s are refused, or break a documented rule',
    (_, parameter) => {
      const httpPart = parameter.in === 'header' ? 'headers' : 'querystring'
      const name = parameter.in === 'header' ? parameter.name.toLowerCase() : parameter.name
      const validate = serviceValidator(
        { type: 'object', properties: { [parameter.name]: parameter.schema } },
        httpPart,
      )
      const mutants = invalidParameterTexts(parameter.schema, parameter.in).filter(
        // Escapes that do not decode are the router's to refuse, not the validator's.
        ({ flaw, refused }) => refused && flaw !== 'malformed escape',
      )
      fc.assert(
        fc.property(mutants, ({ encoded, flaw }) => {
          const text = parameter.in === 'header' ? encoded : decodeURIComponent(encoded)
          const breaksRule = brokenRules(parameter.schema.description, text).length > 0
          expect(!validate({ [name]: text }) || breaksRule, `accepted: ${flaw} ${encoded}`).toBe(
            true,
          )
        }),
        { numRuns: RUNS, seed: SEED },
      )
    },
  )
})

describe('the converter', () => {
  it('refuses a keyword it does not know, rather than ignore a rule', () => {
    expect(() => validValues({ allOf: [{ type: 'string' }] } as JsonSchema)).toThrow(
      /unsupported keyword allOf/,
    )
    expect(() => validValues({ type: 'string', format: 'ipv6' })).toThrow(/unknown string format/)
  })

  it('keeps to a pattern and its lengths', () => {
    const schema = { type: 'string', pattern: '^[a-z]+-\\d{2}$', minLength: 4, maxLength: 8 }
    for (const value of fc.sample(validValues(schema), { numRuns: 100, seed: SEED })) {
      expect(value).toMatch(/^[a-z]{1,5}-\d{2}$/)
    }
  })

  it('reaches both bounds of a decimal step', () => {
    const price = specification.components.schemas.ProductPrice as JsonSchema
    const values = fc.sample(validValues(price), { numRuns: 2000, seed: SEED })
    expect(values).toContain(0.01)
    expect(values).toContain(9_999_999_999.99)
  })
})
