import { isDeepStrictEqual } from 'node:util';
import type { Condition } from './capability';

type Row = Record<string, unknown>;

/** Orders numbers with numbers and strings with strings; anything else is not comparable (null). */
function compare(a: unknown, b: unknown): number | null {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  return null;
}

function matches(row: Row, condition: Condition): boolean {
  const value = row[condition.field];
  switch (condition.op) {
    case 'eq':
      return isDeepStrictEqual(value, condition.value);
    case 'ne':
      return !isDeepStrictEqual(value, condition.value);
    case 'in':
      return (condition.values ?? []).some((candidate) => isDeepStrictEqual(value, candidate));
    case 'exists': {
      const present = value !== undefined && value !== null;
      return condition.value === false ? !present : present;
    }
    default: {
      const order = compare(value, condition.value);
      if (order === null) return false;
      return { gt: order > 0, gte: order >= 0, lt: order < 0, lte: order <= 0 }[condition.op];
    }
  }
}

/** Remote APIs cannot filter for us: `where` is applied to each fetched record. */
export function matchesAll(row: Row, where: Condition[]): boolean {
  return where.every((condition) => matches(row, condition));
}
