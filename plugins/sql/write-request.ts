import { ConflictError, InputError } from '../../core/errors';
import { CHANGE_SET_LIST_LIMIT } from '../capability';
import type { ChangeSet, SnapshotInfo, WriteRequest, WriteResult } from '../capability';

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Shape rules every table write shares. `primaryKey` is the key records are identified by (null
 * when the table has none): upsert needs one, and update may not change it (delete and append instead),
 * so a record's identity and keyset position never move under a reader.
 */
export function checkWriteRequest(request: WriteRequest, primaryKey: string[] | null): void {
  const { operation, rows, where, set } = request;
  if (operation === 'append' || operation === 'upsert') {
    if (!Array.isArray(rows) || !rows.length || !rows.every(isPlainObject)) throw new InputError('rows_required', `${operation} needs a non-empty array of row objects.`);
    if (operation === 'upsert' && !primaryKey?.length) throw new InputError('primary_key_required', 'upsert needs a primary key to match rows on.');
  } else if (operation === 'update' || operation === 'delete') {
    // A where-less update or delete is refused: rewriting a whole table should be deliberate, not a missing filter.
    if (!Array.isArray(where) || !where.length) throw new InputError('where_required', `${operation} needs at least one where condition.`);
    if (operation === 'update') {
      if (!isPlainObject(set) || !Object.keys(set).length) throw new InputError('set_required', 'update needs a non-empty set object.');
      const keyField = primaryKey?.find((field) => field in set);
      if (keyField) throw new InputError('primary_key_immutable', `update cannot set the primary key field "${keyField}"; delete and append instead.`);
    }
  } else {
    throw new InputError('invalid_operation', `Unknown operation "${String(operation)}"; use append, upsert, update or delete.`);
  }
}

/** A row's primary key values as a JSON array (1 and "1" stay distinct); refuses missing or non-scalar values. */
export function rowKey(row: Record<string, unknown>, primaryKey: string[], label = 'the record'): string {
  const values = primaryKey.map((field) => {
    const value = row[field];
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw new InputError('invalid_primary_key', `${label}.${field} is part of the primary key and must be a string, number or boolean.`);
    }
    return value;
  });
  return JSON.stringify(values);
}

/** The primary key values of each row (see rowKey); refuses repeats within the batch. */
export function primaryKeyValues(rows: Array<Record<string, unknown>>, primaryKey: string[]): string[] {
  const seen = new Set<string>();
  return rows.map((row, index) => {
    const key = rowKey(row, primaryKey, `rows[${index}]`);
    if (seen.has(key)) throw new InputError('duplicate_key_in_batch', `rows[${index}] repeats the primary key ${key} of an earlier row.`);
    seen.add(key);
    return key;
  });
}

/** The optimistic-concurrency refusal both table capabilities give: names the current snapshot so the caller can read again. */
export function snapshotConflict(label: string, current: SnapshotInfo, expected: { id: string; version: string }): ConflictError {
  return new ConflictError(
    'snapshot_conflict',
    `${label} has moved on: its current snapshot is ${current.id} (version ${current.version}), not ${expected.id} (version ${expected.version}). Read it again and retry with the current snapshot. Nothing was written.`,
    { currentSnapshot: current, expectedSnapshot: expected },
  );
}

/**
 * Thrown inside a write's transaction to roll it back after a dry run worked out its change set;
 * caught by the same capability, never seen by callers.
 */
export class DryRunRollback extends Error {
  constructor(readonly result: WriteResult) {
    super('dry run');
  }
}

/** Runs a write that may be a dry run: a DryRunRollback from inside it becomes its result. */
export async function unlessDryRun(work: () => Promise<WriteResult>): Promise<WriteResult> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof DryRunRollback) return error.result;
    throw error;
  }
}

export type ChangeRow = { kind: 'added' | 'changed' | 'removed'; key: string | null; before: Record<string, unknown> | null; after: Record<string, unknown> | null; total?: number };

/** Builds a change set from diff rows (kind, key, before, after); `total` per kind when the rows were already cut to the list limit. */
export function changeSetOf(rows: ChangeRow[]): ChangeSet {
  const set: ChangeSet = { added: [], changed: [], removed: [], counts: { added: 0, changed: 0, removed: 0 }, truncated: false };
  for (const row of rows) {
    set.counts[row.kind] = row.total ?? set.counts[row.kind] + 1;
    if (set[row.kind].length >= CHANGE_SET_LIST_LIMIT) continue;
    if (row.kind === 'added') set.added.push({ key: row.key, after: row.after! });
    else if (row.kind === 'removed') set.removed.push({ key: row.key, before: row.before! });
    else set.changed.push({ key: row.key, before: row.before!, after: row.after! });
  }
  set.truncated = (['added', 'changed', 'removed'] as const).some((kind) => set.counts[kind] > set[kind].length);
  return set;
}
