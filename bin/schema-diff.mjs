#!/usr/bin/env node
// Breaking-change report between two versions of schema.graphql or openapi.yaml.
import { register } from 'tsx/esm/api'

register()
await import('../tools/schema-diff.ts')
