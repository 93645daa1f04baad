import type { Model, QueryBuilder } from 'objection';
import type { JsonSchema } from '../../core/schema-validator';

/** Offset paging shared by every list: `?limit=&offset=`, answered with a `pagination` object. */
export interface PageRequest {
  limit: number;
  offset: number;
}

export interface Pagination {
  limit: number;
  offset: number;
  total: number;
  /** The offset of the next page, or null on the last page. */
  nextOffset: number | null;
}

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;

export const pageQueryProperties: Record<string, JsonSchema> = {
  limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE, description: `Page size, 1 to ${MAX_PAGE_SIZE}.` },
  offset: { type: 'integer', minimum: 0, maximum: 2_147_483_647, default: 0, description: 'How many items to skip.' },
};

export const paginationSchema: JsonSchema = {
  type: 'object',
  required: ['limit', 'offset', 'total', 'nextOffset'],
  properties: {
    limit: { type: 'integer' },
    offset: { type: 'integer' },
    total: { type: 'integer' },
    nextOffset: { type: ['integer', 'null'] },
  },
};

export function paginate(page: PageRequest, total: number): Pagination {
  const next = page.offset + page.limit;
  return { limit: page.limit, offset: page.offset, total, nextOffset: next < total ? next : null };
}

/**
 * One page of a filtered query, in a stable order (the columns given, then id), with the total.
 * Every list uses it, so paging behaves the same everywhere.
 */
export async function pageOf<M extends Model>(
  query: QueryBuilder<M, M[]>,
  page: PageRequest,
  order: { column: string; order?: 'asc' | 'desc' } = { column: 'createdAt' },
): Promise<{ rows: M[]; pagination: Pagination }> {
  const [rows, total] = await Promise.all([
    query.clone().orderBy([order, { column: 'id' }]).limit(page.limit).offset(page.offset),
    query.clone().resultSize(),
  ]);
  return { rows, pagination: paginate(page, total) };
}
