import type { components } from '../../generated/openapi.js'

export type PagePagination = components['schemas']['PagePagination']

/** A page by number: where it starts, and how many items it holds. */
export interface PageRequest {
  page: number
  limit: number
}

export const offsetOf = ({ page, limit }: PageRequest) => (page - 1) * limit

/** The figures of a numbered page of a list of `total` items (past the last one too). */
export function pagePagination({ page, limit }: PageRequest, total: number): PagePagination {
  return {
    page,
    limit,
    total,
    pages: Math.ceil(total / limit),
    hasNext: page * limit < total,
    hasPrev: page > 1,
  }
}
