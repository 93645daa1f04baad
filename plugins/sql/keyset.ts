import { InputError } from '../../core/errors';
import type { OrderTerm } from '../capability';
import { SqlParams } from './builder';

/**
 * One column of a keyset order: the ORDER BY terms followed by a unique tie-breaker, so every
 * row has a distinct position and a page resumes exactly after the last row it returned.
 * Both stores sort NULL lowest (ASC NULLS FIRST / DESC NULLS LAST), like jsonb sorts JSON null.
 */
export interface KeysetColumn {
  /** SQL expression (already parameterized). */
  sql: string;
  direction: 'asc' | 'desc';
  /** Cast applied to the bound cursor value, e.g. '::jsonb'; values travel as text so no precision is lost. */
  cast?: string;
  /** False only for an expression that is never NULL: keysetAfter and orderByClause rely on it. */
  nullable: boolean;
}

const invalidCursor = (why: string) => new InputError('invalid_continuation', `The continuation does not belong to this read: ${why}. Start again without it.`);

/**
 * A column that is never NULL is ordered without a NULLS clause: the same order, and the one a plain
 * btree index gives (ASC NULLS LAST, DESC NULLS FIRST backwards), so the first page of a large table
 * reads its first rows off the index rather than sorting the whole table (the managed row_key).
 */
export function orderByClause(columns: KeysetColumn[]): string {
  const nulls = (c: KeysetColumn) => (!c.nullable ? '' : c.direction === 'asc' ? ' NULLS FIRST' : ' NULLS LAST');
  return columns.map((c) => `${c.sql} ${c.direction === 'asc' ? 'ASC' : 'DESC'}${nulls(c)}`).join(', ');
}

/** The text form of each keyset column, selected with the rows so the last one becomes the cursor. */
export function cursorSelect(columns: KeysetColumn[]): string {
  return `ARRAY[${columns.map((c) => `(${c.sql})::text`).join(', ')}]`;
}

/** "Comes after the cursor row": (a > va) OR (a = va AND b > vb) OR ..., respecting direction and NULL placement. */
export function keysetAfter(columns: KeysetColumn[], key: Array<string | null>, params: SqlParams): string {
  if (key.length !== columns.length) throw invalidCursor('its position does not match the order');
  const bound = key.map((value, i) => (value === null ? null : `${params.add(value)}${columns[i].cast ?? ''}`));
  const same = (i: number) => (bound[i] === null ? `${columns[i].sql} IS NULL` : `${columns[i].sql} = ${bound[i]}`);
  const after = (i: number) => {
    const { sql, direction, nullable } = columns[i];
    const value = bound[i];
    if (value === null) return direction === 'asc' ? `${sql} IS NOT NULL` : 'FALSE';
    if (direction === 'asc') return `${sql} > ${value}`;
    return nullable ? `(${sql} < ${value} OR ${sql} IS NULL)` : `${sql} < ${value}`;
  };
  const branches = columns.map((_, i) => [...columns.slice(0, i).map((__, j) => same(j)), after(i)].join(' AND '));
  return branches.map((branch) => `(${branch})`).join(' OR ');
}

/** Continuation state shared by the table capabilities: the order it belongs to and where the last page ended. */
export interface TableCursor {
  order: Array<[string, 'asc' | 'desc']>;
  /** Keyset position (text form of each keyset column) ... */
  key?: Array<string | null>;
  /** ... or, for tables without a unique key, a row offset. */
  offset?: number;
  /** Snapshot version the read is pinned to (managed tables). */
  version?: string;
}

/** Checks a continuation came from a read with the same orderBy (following it with another order would skip rows). */
export function decodeCursor(after: unknown, orderBy: OrderTerm[]): TableCursor {
  const cursor = after as TableCursor;
  if (!cursor || typeof cursor !== 'object' || !Array.isArray(cursor.order)) throw invalidCursor('it is malformed');
  const expected = JSON.stringify(orderBy.map((t) => [t.field, t.direction]));
  if (JSON.stringify(cursor.order) !== expected) throw invalidCursor('orderBy differs');
  const keyOk = Array.isArray(cursor.key) && cursor.key.every((v) => v === null || typeof v === 'string');
  const offsetOk = Number.isSafeInteger(cursor.offset) && (cursor.offset as number) >= 0;
  if (keyOk === offsetOk) throw invalidCursor('it is malformed');
  if (cursor.version !== undefined && typeof cursor.version !== 'string') throw invalidCursor('it is malformed');
  return cursor;
}

export function orderOf(orderBy: OrderTerm[]): TableCursor['order'] {
  return orderBy.map((t) => [t.field, t.direction]);
}
