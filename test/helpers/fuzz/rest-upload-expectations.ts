import { eq } from 'drizzle-orm'
import { expect } from 'vitest'
import { loadConfig } from '../../../src/config.js'
import { type UploadRow, uploads } from '../../../src/db/schema.js'
import type { OperationId } from '../../../src/http/operations.js'
import { testEnvironment } from '../server.js'
import { pageFigures, pageOf } from './orders-model.js'
import type { Expectation, ValidExchange } from './rest-expectations.js'
import { notModified } from './rest-order-expectations.js'
import { accountOf } from './world.js'

/** The fuzz servers' quota: the default, as they set none. */
const QUOTA_BYTES = loadConfig(testEnvironment).uploadQuotaBytes

const uploadOf = (row: UploadRow) => ({
  id: row.id,
  name: row.name,
  mediaType: row.mediaType,
  size: row.size,
  sha256: row.sha256,
  createdAt: row.createdAt.toISOString(),
})

/**
 * The upload as the caller may see it, or the status refusing it: 404 for none (or one
 * still arriving), 403 for another user's, 410 for a deleted one of theirs.
 */
function visibleUpload({ before, inputs, world, caller }: ValidExchange): UploadRow | number {
  const row = before.uploads.get(Number(inputs.path.id))
  if (!row || row.status === 'pending') return 404
  if (caller !== 'admin' && row.ownerId !== accountOf(world, caller).id) return 403
  return row.status === 'deleted' ? 410 : row
}

export const uploadExpectations = {
  uploadFile({ response }) {
    // The harness writes JSON bodies only; multipart uploads are driven in uploads.test.ts.
    expect(response.status, response.text).toBe(415)
  },

  downloadFile(exchange) {
    const visible = visibleUpload(exchange)
    if (typeof visible === 'number') return expect(exchange.response.status).toBe(visible)
    expect([200, 206, 304, 416]).toContain(exchange.response.status)
  },

  listUploads(exchange) {
    const { response, inputs, before, world, caller } = exchange
    const { page = 1, limit = 10 } = inputs.query as Record<string, any>
    if (notModified(exchange)) return
    const ownerId = accountOf(world, caller).id
    const listed = [...before.uploads.values()]
      .filter((row) => row.ownerId === ownerId && row.status === 'complete')
      .sort((a, b) => b.id - a.id)
    expect(response.body).toEqual({
      data: pageOf(listed, page, limit).map(uploadOf),
      pagination: pageFigures(page, limit, listed.length),
    })
  },

  getUploadUsage(exchange) {
    const { response, before, world, caller } = exchange
    if (notModified(exchange)) return
    const ownerId = accountOf(world, caller).id
    const held = [...before.uploads.values()].filter(
      (row) => row.ownerId === ownerId && row.status !== 'deleted',
    )
    expect(response.body.data).toEqual({
      usedBytes: held.reduce((sum, row) => sum + row.size, 0),
      quotaBytes: caller === 'admin' ? null : QUOTA_BYTES,
    })
  },

  async deleteUpload(exchange) {
    const visible = visibleUpload(exchange)
    if (typeof visible === 'number') return expect(exchange.response.status).toBe(visible)
    expect(exchange.response.status, exchange.response.text).toBe(204)
    const [row] = await exchange.world.db.select().from(uploads).where(eq(uploads.id, visible.id))
    expect(row?.status).toBe('deleted')
  },
} satisfies Partial<Record<OperationId, Expectation>>
