/**
 * The success envelopes of each API version. v1's are written in openapi.yaml; v2's are
 * derived from them here, both for the v2 description (tools/openapi-v2.ts) and for the
 * serializers of v2 answers at run time, so the two cannot drift apart.
 */
type Schema = Record<string, unknown>

/** What v2's `meta` holds in every answer, besides what v1 put beside `data`. */
export const RESPONSE_META_FIELDS = {
  requestId: {
    type: 'string',
    format: 'uuid',
    maxLength: 36,
    description: 'The `x-request-id` of this response, to quote when reporting it.',
  },
  timestamp: {
    type: 'string',
    format: 'date-time',
    maxLength: 30,
    description: 'When this response was made.',
  },
} as const

/**
 * v2's form of a v1 success envelope (`{ data, ...others }`): `data` stays, the others
 * (such as `pagination`) move into `meta` beside `requestId` and `timestamp`. Undefined
 * for a schema that is not a success envelope. `metaFields` are the schemas of
 * RESPONSE_META_FIELDS, or references to them.
 */
export function versionTwoEnvelope(v1: Schema, metaFields: Schema): Schema | undefined {
  const properties = v1.properties as Record<string, Schema> | undefined
  if (!properties?.data) return undefined
  const { data, ...others } = properties
  const required = (v1.required as string[] | undefined) ?? []
  return {
    type: 'object',
    additionalProperties: false,
    required: ['data', 'meta'],
    properties: {
      data,
      meta: {
        type: 'object',
        additionalProperties: false,
        required: [...Object.keys(metaFields), ...required.filter((name) => name !== 'data')],
        properties: { ...metaFields, ...others },
      },
    },
  }
}

/** A v1 answer in v2's envelope. */
export function inVersionTwoEnvelope(
  { data, ...others }: { data: unknown } & Record<string, unknown>,
  requestId: string,
) {
  return { data, meta: { requestId, timestamp: new Date().toISOString(), ...others } }
}
