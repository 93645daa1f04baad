import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { ConflictError, InputError } from '../../core/errors';
import { EMPTY_SNAPSHOT, sameSnapshot } from '../capability';
import type { CapabilityContext, StagedWriteRequest, WriteRequest, WriteResult } from '../capability';
import { compileWhere, SqlParams } from '../sql/builder';
import { checkWriteRequest, DryRunRollback, primaryKeyValues, snapshotConflict, unlessDryRun } from '../sql/write-request';
import { jsonbConditions, jsonParam } from './conditions';
import { announceCommitted, changesAt, commitSnapshot } from './snapshots';
import { inTableWrite, latestSnapshot, qualified, run, toSnapshotInfo, workspaceSchema } from './storage';
import { parseTarget } from './targets';

// Writes: a write request applied as one new snapshot, and a run's staged records committed as one.

/** Row keys: the primary key values as a JSON array, or a random id for tables without a key. */
function rowKeys(rows: Array<Record<string, unknown>>, primaryKey: string[] | null): string[] {
  return primaryKey ? primaryKeyValues(rows, primaryKey) : rows.map(() => randomUUID());
}

function checkProvenance(request: WriteRequest): void {
  const { provenance } = request;
  if (!provenance || (provenance.kind !== 'run' && provenance.kind !== 'write') || typeof provenance.id !== 'string' || !provenance.id) {
    throw new InputError('invalid_provenance', 'A write needs provenance {kind: run|write, id}.');
  }
}

/**
 * Applies one operation as version `version`: changed or deleted records get valid_to = version,
 * new record versions get valid_from = version, so every earlier snapshot still reads as it was.
 * Returns the number of records appended, upserted, updated or deleted.
 */
async function applyWrite(trx: Knex.Transaction, t: string, request: WriteRequest, primaryKey: string[] | null, version: number, committed: Date): Promise<number> {
  const params = new SqlParams();
  const v = params.add(version);
  const provenance = `${params.add(request.provenance.kind)}, ${params.add(request.provenance.id)}, ${params.add(committed)}::timestamptz`;
  const columns = '(row_key, data, valid_from, produced_by_kind, produced_by_id, produced_at)';
  const closeCurrent = (predicate: string) => run(trx, `UPDATE ${t} SET valid_to = ${v} WHERE valid_to IS NULL AND (${predicate})`, params);
  switch (request.operation) {
    case 'append': {
      const rows = request.rows ?? [];
      const keys = rowKeys(rows, primaryKey);
      const entries = jsonParam(rows.map((data, i) => ({ key: keys[i], data })), params);
      // A key already current violates the partial unique index: reported as duplicate_key.
      await run(trx, `INSERT INTO ${t} ${columns} SELECT e->>'key', e->'data', ${v}, ${provenance} FROM jsonb_array_elements(${entries}) e`, params);
      return rows.length;
    }
    case 'upsert': {
      const rows = request.rows ?? [];
      const keys = rowKeys(rows, primaryKey);
      const entries = jsonParam(rows.map((data, i) => ({ key: keys[i], data })), params);
      await closeCurrent(`row_key IN (SELECT e->>'key' FROM jsonb_array_elements(${entries}) e)`);
      // Fields the row leaves out keep their previous values, as with INSERT ... ON CONFLICT DO UPDATE of the given columns.
      await run(
        trx,
        `INSERT INTO ${t} ${columns}
          SELECT e->>'key', coalesce(previous.data, '{}'::jsonb) || (e->'data'), ${v}, ${provenance}
          FROM jsonb_array_elements(${entries}) e LEFT JOIN ${t} previous ON previous.row_key = e->>'key' AND previous.valid_to = ${v}`,
        params,
      );
      return rows.length;
    }
    case 'update': {
      const closed = await closeCurrent(compileWhere(request.where ?? [], jsonbConditions, params));
      await run(trx, `INSERT INTO ${t} ${columns} SELECT row_key, data || ${jsonParam(request.set, params)}, ${v}, ${provenance} FROM ${t} WHERE valid_to = ${v}`, params);
      return closed.rowCount;
    }
    case 'delete':
      return (await closeCurrent(compileWhere(request.where ?? [], jsonbConditions, params))).rowCount;
  }
}

/** Field names a write brings to the table: the keys of its rows, or of its update set. */
function writtenFields(request: WriteRequest): string[] {
  const objects = request.operation === 'update' ? [request.set ?? {}] : request.operation === 'delete' ? [] : (request.rows ?? []);
  return [...new Set(objects.flatMap((object) => Object.keys(object)))];
}

const duplicateKey = (table: string) => new ConflictError('duplicate_key', `A row with the same primary key is already in table "${table}"; use upsert to replace it.`);

export async function writeRecords(ctx: CapabilityContext, rawTarget: Record<string, unknown>, request: WriteRequest): Promise<WriteResult> {
  const { table, primaryKey } = parseTarget(ctx, rawTarget);
  checkWriteRequest(request, primaryKey);
  checkProvenance(request);
  const schema = workspaceSchema(ctx.installation.workspaceId);
  const t = qualified(schema, table);
  try {
    // Nested in the caller's transaction when ctx.db is one (as a savepoint): all or nothing either way.
    const written = await unlessDryRun(() => inTableWrite(ctx.managedTables.catalogs, ctx.db, schema, table, primaryKey, async (trx, state) => {
      const latest = state.latestVersion ? await latestSnapshot(trx, schema, table) : undefined;
      const current = latest ? toSnapshotInfo(latest) : EMPTY_SNAPSHOT;
      const expected = request.expectedSnapshot;
      if (expected && !sameSnapshot(current, expected)) throw snapshotConflict(`Table "${table}"`, current, expected);
      const result = await commitSnapshot(trx, ctx.installation.workspaceId, schema, table, latest, request.operation, request.provenance, async (version, committed) => ({
        affected: await applyWrite(trx, t, request, primaryKey, version, committed),
        fields: writtenFields(request),
      }));
      if (request.dryRun) throw new DryRunRollback({ affected: result.affected, snapshot: current, changes: await changesAt(trx, t, latest ? latest.version + 1 : 1, primaryKey !== null) });
      return result;
    }));
    if (!request.dryRun) {
      announceCommitted(ctx, ctx.installation.workspaceId);
      ctx.managedTables.statistics.afterCommit(ctx.db, schema, table, written.affected);
    }
    return written;
  } catch (error) {
    if (request.operation === 'append' && (error as { code?: string }).code === '23505') throw duplicateKey(table);
    throw error;
  }
}

/**
 * A run's staged records as one snapshot, set-based inside Weft's database (no record passes
 * through this process): append inserts them; upsert and replace keep the last staged record of
 * each key; replace also ends every current record, so readers see the old table until the commit
 * and the new one after, never an empty or half-filled one.
 */
export async function commitStagedWrite(ctx: CapabilityContext, rawTarget: Record<string, unknown>, request: StagedWriteRequest): Promise<WriteResult> {
  const { table, primaryKey } = parseTarget(ctx, rawTarget);
  if (request.mode === 'upsert' && !primaryKey) throw new InputError('primary_key_required', `upsert into managed table "${table}" needs a primaryKey on its target.`);
  const schema = workspaceSchema(ctx.installation.workspaceId);
  const t = qualified(schema, table);
  try {
    const written = await inTableWrite(ctx.managedTables.catalogs, ctx.db, schema, table, primaryKey, async (trx, state) => {
      const latest = state.latestVersion ? await latestSnapshot(trx, schema, table) : undefined;
      return commitSnapshot(trx, ctx.installation.workspaceId, schema, table, latest, request.mode, request.provenance, async (version, committed) => {
        const params = new SqlParams();
        const v = params.add(version);
        const staged = request.rows.relation(params, { latestPerKey: primaryKey !== null && request.mode !== 'append' });
        const provenance = `${params.add(request.provenance.kind)}, ${params.add(request.provenance.id)}, ${params.add(committed)}::timestamptz`;
        const columns = '(row_key, data, valid_from, produced_by_kind, produced_by_id, produced_at)';
        if (request.mode === 'replace') await run(trx, `UPDATE ${t} SET valid_to = ${v} WHERE valid_to IS NULL`, params);
        if (request.mode === 'upsert') await run(trx, `UPDATE ${t} SET valid_to = ${v} WHERE valid_to IS NULL AND row_key IN (SELECT s.row_key FROM (${staged}) s)`, params);
        const merged = request.mode === 'upsert' ? `coalesce(previous.data, '{}'::jsonb) || s.data` : 's.data';
        const previous = request.mode === 'upsert' ? `LEFT JOIN ${t} previous ON previous.row_key = s.row_key AND previous.valid_to = ${v}` : '';
        const inserted = await run(trx, `INSERT INTO ${t} ${columns} SELECT coalesce(s.row_key, gen_random_uuid()::text), ${merged}, ${v}, ${provenance} FROM (${staged}) s ${previous}`, params);
        const names = new SqlParams();
        const { rows } = await run<{ name: string }>(trx, `SELECT DISTINCT jsonb_object_keys(s.data) AS name FROM (${request.rows.relation(names, { latestPerKey: false })}) s`, names);
        return { affected: inserted.rowCount, fields: rows.map((row) => row.name) };
      });
    });
    announceCommitted(ctx, ctx.installation.workspaceId);
    ctx.managedTables.statistics.afterCommit(ctx.db, schema, table, written.affected);
    return written;
  } catch (error) {
    if (request.mode === 'append' && (error as { code?: string }).code === '23505') throw duplicateKey(table);
    throw error;
  }
}
