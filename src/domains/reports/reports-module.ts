import type { Infrastructure } from '../domain-module.js'
import { createReportHandlers } from './reports-handlers.js'
import { createReportsRepository } from './reports-repository.js'
import { createReportsService } from './reports-service.js'

/** Reports: figures of the catalog and of the orders, aggregated by the database. */
export function createReportsModule({ database }: Pick<Infrastructure, 'database'>) {
  return {
    name: 'reports',
    handlers: createReportHandlers(createReportsService(createReportsRepository(database.db))),
  }
}
