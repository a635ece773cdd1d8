import { buildSchema, parse } from 'graphql'
import { describe, expect, it } from 'vitest'
import { createDeprecationCounter } from '../src/graphql/deprecations.js'

const schema = buildSchema(`
  type Query { shelf: Shelf, lamp: Lamp }
  type Shelf { lamps: [Lamp!]!, size: Int @deprecated(reason: "Use width") width: Int }
  type Lamp { name: String, watts: Int @deprecated(reason: "Use power") power: Int }
`)

describe('counting uses of deprecated GraphQL fields', () => {
  const counted = () => {
    const uses: string[] = []
    return { uses, count: createDeprecationCounter((field) => uses.push(field)) }
  }

  it('counts each deprecated field an operation selects, once per operation, by Type.field', () => {
    const { uses, count } = counted()
    const document = parse(`{ shelf { size width lamps { watts name } } lamp { watts power } }`)
    count(schema, document)
    expect(uses.sort()).toEqual(['Lamp.watts', 'Shelf.size'])
    count(schema, document)
    expect(uses).toHaveLength(4)
  })

  it('finds them through fragments and aliases, and counts nothing for current fields', () => {
    const { uses, count } = counted()
    count(schema, parse(`{ lamp { ...bulb } } fragment bulb on Lamp { old: watts }`))
    expect(uses).toEqual(['Lamp.watts'])
    count(schema, parse(`{ shelf { width lamps { power } } }`))
    expect(uses).toEqual(['Lamp.watts'])
  })
})
