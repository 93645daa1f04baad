import type { JsonSchema } from '../core/schema-validator';
import { pageQueryProperties, paginationSchema } from '../services/shared/pagination';

/** Canonical lowercase UUIDs only, as Weft writes them: one spelling per id, so comparisons never disagree. */
export const uuid: JsonSchema = {
  type: 'string',
  format: 'uuid',
  pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$',
  errorMessage: { pattern: 'must be a UUID in lowercase canonical form' },
};
export const timestamp: JsonSchema = { type: 'string', format: 'date-time' };
export const nullableTimestamp: JsonSchema = { type: ['string', 'null'], format: 'date-time' };

/** Path parameters: each named id must be a UUID. */
export function idParams(...names: string[]): JsonSchema {
  return {
    type: 'object',
    required: names,
    properties: Object.fromEntries(names.map((name) => [name, uuid])),
  };
}

/** Query schema for a list: limit/offset plus the list's own filters. */
export function listQuery(filters: Record<string, JsonSchema> = {}): JsonSchema {
  return { type: 'object', additionalProperties: false, properties: { ...pageQueryProperties, ...filters } };
}

/** Response envelope of a list: { <name>: [...], pagination }. */
export function listResponse(name: string, item: JsonSchema): JsonSchema {
  return {
    type: 'object',
    required: [name, 'pagination'],
    properties: { [name]: { type: 'array', items: item }, pagination: paginationSchema },
  };
}
