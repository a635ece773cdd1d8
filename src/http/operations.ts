import type { FastifyReply, FastifyRequest } from 'fastify'
import type { operations } from '../../generated/openapi.js'

/** Every operationId of openapi.yaml, as openapi-typescript generated them. */
export type OperationId = keyof operations

type Operation<Id extends OperationId> = operations[Id]
type JsonOf<T> = T extends { content: { 'application/json': infer Body } } ? Body : never
type Part<T, Key extends string> = T extends { [K in Key]?: infer Value }
  ? [Value] extends [never]
    ? unknown
    : NonNullable<Value>
  : unknown

type RequestBody<Id extends OperationId> = JsonOf<NonNullable<Operation<Id>['requestBody']>>
type SuccessStatus = 200 | 201 | 202

/** The 2xx bodies the spec allows; an operation that only answers 204 returns the sent reply. */
type SuccessBody<Id extends OperationId> = [
  JsonOf<Operation<Id>['responses'][keyof Operation<Id>['responses'] & SuccessStatus]>,
] extends [never]
  ? FastifyReply
  : JsonOf<Operation<Id>['responses'][keyof Operation<Id>['responses'] & SuccessStatus]>

export type OperationRequest<Id extends OperationId> = FastifyRequest<{
  Body: RequestBody<Id>
  Querystring: Part<Operation<Id>['parameters'], 'query'>
  Params: Part<Operation<Id>['parameters'], 'path'>
  Headers: Part<Operation<Id>['parameters'], 'header'>
}>

export type OperationHandler<Id extends OperationId> = (
  request: OperationRequest<Id>,
  reply: FastifyReply,
) => Promise<SuccessBody<Id>>

/**
 * One handler per operation of openapi.yaml. Domains build slices of it with
 * `satisfies Partial<…>`; the app assembles the whole map, so a missing operation, an
 * extra one, or a handler that drifts from its operation fails `tsc`.
 */
export type ServiceHandlers = { [Id in OperationId]: OperationHandler<Id> }

/** ajv has applied the spec's default; this only tells the compiler so. */
export function defaulted<T>(value: T | undefined, name: string): T {
  if (value === undefined) throw new Error(`The spec gives ${name} no default`)
  return value
}

/**
 * Whether the client sent a query parameter itself: ajv fills in defaults, so only the
 * URL tells (for parameters that exclude each other, which OpenAPI cannot state).
 */
export function sentInQuery(request: FastifyRequest, name: string): boolean {
  const start = request.url.indexOf('?')
  return start >= 0 && new URLSearchParams(request.url.slice(start + 1)).has(name)
}
