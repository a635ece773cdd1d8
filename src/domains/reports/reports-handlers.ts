import accepts from 'accepts'
import type { ServiceHandlers } from '../../http/operations.js'
import { notAcceptable } from '../../platform/errors.js'
import { csvStream } from './csv.js'
import type { ReportsService } from './reports-service.js'

const CSV = 'text/csv'
// JSON in any version's media type; CSV when the client prefers it.
const ANSWERS = [
  'application/json',
  CSV,
  'application/vnd.catalog.v1+json',
  'application/vnd.catalog.v2+json',
]

export function createReportHandlers(reports: ReportsService) {
  return {
    async generateReport(request, reply) {
      const { type } = request.query
      const answer = accepts(request.raw).type(ANSWERS)
      if (!answer) throw notAcceptable(`Reports are answered as JSON or ${CSV}`)
      if (answer !== CSV) return { data: await reports.report(type) }
      const { header, rows } = await reports.table(type)
      const day = new Date().toISOString().slice(0, 10)
      return reply
        .type('text/csv; charset=utf-8; header=present')
        .header('content-disposition', `attachment; filename="${type}-report-${day}.csv"`)
        .send(csvStream(header, rows))
    },
  } satisfies Partial<ServiceHandlers>
}
