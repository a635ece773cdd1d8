/**
 * A variable's schema as config.ts writes it: a type, its bounds, and `description`:
 * what a string takes in words (what its pattern means), or the unit an integer counts.
 */
export interface VariableSchema {
  type: string
  enum?: readonly string[]
  minimum?: number
  maximum?: number
  minLength?: number
  maxLength?: number
  pattern?: string
  description?: string
}

/** An ajv error as env-schema reports it: the variable is the path's one segment. */
interface SchemaError {
  instancePath: string
}

/**
 * The refusal of each variable with a schema error, in words of what it takes: never
 * ajv's own messages, which quote patterns and schema keywords an operator cannot act on.
 */
export function refusals(
  errors: readonly SchemaError[],
  schemas: Readonly<Record<string, VariableSchema>>,
): string[] {
  const names = new Set(errors.map((error) => error.instancePath.slice(1)))
  return [...names].map((name) => `${name} must be ${whatItTakes(schemas[name])}`)
}

export function whatItTakes(schema: VariableSchema | undefined): string {
  if (schema?.enum) return `one of ${inWords(schema.enum)}`
  switch (schema?.type) {
    case 'boolean':
      return 'true or false'
    case 'integer':
      return wholeNumber(schema)
    case 'string':
      return schema.description ?? lengthOf(schema)
    default:
      throw new Error(`config.ts: a variable of type ${schema?.type} has no words`)
  }
}

function wholeNumber({ description, minimum, maximum }: VariableSchema): string {
  const noun = description ? `a whole number of ${description}` : 'a whole number'
  if (minimum !== undefined && maximum !== undefined) return `${noun} from ${minimum} to ${maximum}`
  if (minimum !== undefined) return `${noun}, at least ${minimum}`
  return maximum === undefined ? noun : `${noun}, at most ${maximum}`
}

function lengthOf({ minLength, maxLength }: VariableSchema): string {
  if (minLength !== undefined && maxLength !== undefined) {
    return `${minLength} to ${maxLength} characters long`
  }
  if (minLength !== undefined) return `at least ${minLength} characters long`
  return maxLength === undefined ? 'text' : `at most ${maxLength} characters long`
}

const inWords = (values: readonly string[]) =>
  values.length > 1 ? `${values.slice(0, -1).join(', ')} or ${values.at(-1)}` : `${values[0]}`
