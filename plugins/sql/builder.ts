import { InputError } from '../../core/errors';
import type { Condition } from '../capability';

/**
 * Collects the bound values of one statement and hands out `$n` placeholders. A placeholder can
 * be reused (a field expression in SELECT, WHERE and ORDER BY binds its name once).
 */
export class SqlParams {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** Quotes an identifier the way PostgreSQL's quote_ident does: always quoted, inner quotes doubled. */
export function quoteIdentifier(name: string): string {
  if (name.includes('\u0000')) throw new InputError('invalid_identifier', 'Identifiers cannot contain NUL characters.');
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * Rewrites `$n` placeholders into knex's positional `?`, repeating a value where its placeholder
 * repeats. Only for SQL text built from fixed fragments and validated identifiers: a `$n` or `?`
 * inside a quoted name would be misread, which is why user text only ever arrives as a binding.
 */
export function toKnexBindings(sql: string, values: unknown[]): { sql: string; bindings: unknown[] } {
  const bindings: unknown[] = [];
  const text = sql.replace(/\$(\d+)/g, (_, index: string) => {
    bindings.push(values[Number(index) - 1]);
    return '?';
  });
  return { sql: text, bindings };
}

export type Comparison = 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte';
export const comparisonOperators: Record<Comparison, string> = { eq: '=', ne: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' };

/** How one store turns a condition on a field into SQL; values always go through `params`. */
export interface ConditionDialect {
  compare(field: string, op: Comparison, value: unknown, params: SqlParams): string;
  isIn(field: string, values: unknown[], params: SqlParams): string;
  exists(field: string, params: SqlParams): string;
}

function invalid(index: number, message: string): InputError {
  return new InputError('invalid_condition', `where[${index}]: ${message}`, [{ path: `/where/${index}`, message }]);
}

/**
 * Compiles `where` conditions into one AND-ed SQL predicate ('TRUE' when there are none).
 * `exists` with value false means "absent" (missing or null); any other value means present.
 */
export function compileWhere(conditions: Condition[], dialect: ConditionDialect, params: SqlParams): string {
  const parts = conditions.map((condition, index) => {
    const { field, op } = condition;
    if (typeof field !== 'string' || !field) throw invalid(index, 'field must be a non-empty string');
    switch (op) {
      case 'exists':
        return condition.value === false ? `NOT (${dialect.exists(field, params)})` : dialect.exists(field, params);
      case 'in':
        if (!Array.isArray(condition.values) || condition.values.length === 0) throw invalid(index, 'op "in" needs a non-empty values array');
        return dialect.isIn(field, condition.values, params);
      case 'eq':
      case 'ne':
        if (condition.value === undefined) throw invalid(index, `op "${op}" needs a value`);
        return dialect.compare(field, op, condition.value, params);
      case 'gt':
      case 'gte':
      case 'lt':
      case 'lte':
        if (condition.value === undefined || condition.value === null) throw invalid(index, `op "${op}" needs a non-null value`);
        return dialect.compare(field, op, condition.value, params);
      default:
        throw invalid(index, `unknown op "${String(op)}"; use eq, ne, in, exists, gt, gte, lt or lte`);
    }
  });
  return parts.length ? parts.map((part) => `(${part})`).join(' AND ') : 'TRUE';
}
