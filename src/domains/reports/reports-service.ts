import type { components } from '../../../generated/openapi.js'
import type { CsvCell } from './csv.js'
import type { ReportsRepository } from './reports-repository.js'

type CatalogReport = components['schemas']['CatalogReport']
type OrdersReport = components['schemas']['OrdersReport']
type OrderStatus = components['schemas']['OrderStatus']
export type ReportType = components['schemas']['Report']['type']

export interface ReportTable {
  header: string[]
  rows: CsvCell[][]
}

/** The reports: figures the database aggregates, shaped for JSON and for CSV. */
export function createReportsService(reports: ReportsRepository) {
  async function ordersReport(): Promise<OrdersReport> {
    const figures = await reports.orderFigures()
    const byDay = new Map<string, OrdersReport['byDay'][number]>()
    for (const { day, status, orders, total } of figures) {
      if (day !== null && status === null) byDay.set(day, { day, orders, total, byStatus: {} })
    }
    for (const { day, status, orders } of figures) {
      const ofDay = day === null ? undefined : byDay.get(day)
      if (ofDay && status !== null) ofDay.byStatus[status as OrderStatus] = orders
    }
    return {
      type: 'orders',
      generatedAt: new Date().toISOString(),
      byStatus: figures
        .filter((row) => row.day === null && row.status !== null)
        .map(({ status, orders, total }) => ({ status: status as OrderStatus, orders, total })),
      byDay: [...byDay.values()],
    }
  }

  async function catalogReport(): Promise<CatalogReport> {
    const categories = await reports.catalogFigures()
    return { type: 'catalog', generatedAt: new Date().toISOString(), categories }
  }

  return {
    report: (type: ReportType) => (type === 'catalog' ? catalogReport() : ordersReport()),

    /** A report as one table, for CSV: a header, then a row per category, or per day and status. */
    async table(type: ReportType): Promise<ReportTable> {
      if (type === 'catalog') {
        const categories = await reports.catalogFigures()
        return {
          header: CATALOG_COLUMNS,
          rows: categories.map((figures) => CATALOG_COLUMNS.map((column) => figures[column])),
        }
      }
      const figures = await reports.orderFigures()
      return {
        header: ['day', 'status', 'orders', 'total'],
        rows: figures
          .filter((row) => row.day !== null && row.status !== null)
          .map(({ day, status, orders, total }) => [day, status, orders, total]),
      }
    },
  }
}

export type ReportsService = ReturnType<typeof createReportsService>

const CATALOG_COLUMNS = [
  'category',
  'products',
  'minPrice',
  'avgPrice',
  'maxPrice',
  'totalStock',
  'stockValue',
] as const satisfies (keyof CatalogReport['categories'][number])[]
