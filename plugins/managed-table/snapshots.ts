import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { InputError } from '../../core/errors';
import { afterCommit } from '../../db/after-commit';
import { CHANGE_SET_LIST_LIMIT, EMPTY_SNAPSHOT } from '../capability';
import type { CapabilityContext, ChangeSet, RecordsQuery, SnapshotInfo, WriteRequest, WriteResult } from '../capability';
import { quoteIdentifier, SqlParams } from '../sql/builder';
import type { TableCursor } from '../sql/keyset';
import { changeSetOf } from '../sql/write-request';
import { snapshotScope, SNAPSHOT_NOTICE_CHANNEL } from '../snapshot-notices';
import { findSnapshot, latestSnapshot, latestSnapshots, registerFields, run, SnapshotRow, tableExists, toSnapshotInfo, workspaceSchema } from './storage';
import { parseTarget } from './targets';

// Snapshots: the one a read sees, committing a new one, the change set of one, the current ones.

export const unknownSnapshot = (message: string) => new InputError('unknown_snapshot', message);
export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isoTimestamp = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** The snapshot a read sees: the continuation's (pinned), the requested id, the last at or before asOf, or the latest. */
export async function resolveSnapshot(db: Knex, schema: string, table: string, query: RecordsQuery, cursor?: TableCursor): Promise<SnapshotRow | undefined> {
  if (cursor) {
    const row = await findSnapshot(db, schema, table, (p) => `version = ${p.add(cursor.version)}::bigint`);
    if (!row) throw new InputError('invalid_continuation', 'The continuation names a snapshot this table does not have. Start again without it.');
    return row;
  }
  if (query.snapshotId !== undefined) {
    const id = query.snapshotId;
    const row = uuidPattern.test(id) ? await findSnapshot(db, schema, table, (p) => `id = ${p.add(id)}::uuid`) : undefined;
    if (!row) throw unknownSnapshot(`Table "${table}" has no snapshot ${id}.`);
    return row;
  }
  if (query.asOf !== undefined) {
    const asOf = query.asOf;
    if (!isoTimestamp.test(asOf) || Number.isNaN(Date.parse(asOf))) throw new InputError('invalid_as_of', 'asOf must be an ISO 8601 timestamp.');
    const row = await findSnapshot(db, schema, table, (p) => `committed_at <= ${p.add(new Date(asOf))}::timestamptz ORDER BY version DESC LIMIT 1`);
    if (!row) throw unknownSnapshot(`Table "${table}" has no snapshot committed at or before ${asOf}.`);
    return row;
  }
  return latestSnapshot(db, schema, table);
}

/**
 * Commits one new snapshot of a table locked by inTableWrite: `apply` writes the record versions
 * as `version` and returns how many records it affected and which field names it wrote; the
 * snapshot row, the field registry and the latest version follow in the same transaction.
 */
export async function commitSnapshot(
  trx: Knex.Transaction,
  workspaceId: string,
  schema: string,
  table: string,
  latest: SnapshotRow | undefined,
  operation: string,
  provenance: WriteRequest['provenance'],
  apply: (version: number, committed: Date) => Promise<{ affected: number; fields: string[] }>,
): Promise<WriteResult> {
  const version = (latest?.version ?? 0) + 1;
  // Millisecond precision, because a committedAt echoed back as asOf must find its own snapshot;
  // at least a millisecond after the previous commit, so time order and version order agree and
  // two commits within one millisecond still have an asOf each.
  const clock = new SqlParams();
  const { rows } = await run<{ committed: Date }>(trx, `SELECT greatest(date_trunc('milliseconds', clock_timestamp()), ${clock.add(latest?.committed ?? null)}::timestamptz + interval '1 millisecond') AS committed`, clock);
  const committed = rows[0].committed;
  const { affected, fields } = await apply(version, committed);
  await registerFields(trx, schema, table, fields);
  const snapshot: SnapshotRow = { id: randomUUID(), version, committed };
  const params = new SqlParams();
  const values = [snapshot.id, table, version, committed, operation, affected, provenance.kind, provenance.id].map((value) => params.add(value));
  await run(trx, `INSERT INTO ${quoteIdentifier(schema)}._snapshots (id, table_name, version, committed_at, operation, affected, produced_by_kind, produced_by_id) VALUES (${values.join(', ')})`, params);
  const bump = new SqlParams();
  // The statement also announces the snapshot to every process, delivered at commit (snapshot-notices.ts).
  const notice = `(SELECT pg_notify(${bump.add(SNAPSHOT_NOTICE_CHANNEL)}, ${bump.add(snapshotScope(workspaceId))})) AS notice`;
  await run(trx, `UPDATE ${quoteIdentifier(schema)}._tables SET latest_version = ${bump.add(version)} FROM ${notice} WHERE table_name = ${bump.add(table)}`, bump);
  return { affected, snapshot: toSnapshotInfo(snapshot) };
}

/** Tells the context's runtime a snapshot is committed: now, or once the caller's transaction commits (every process also hears the NOTIFY). */
export function announceCommitted(ctx: CapabilityContext, workspaceId: string): void {
  afterCommit(ctx.db, () => ctx.snapshotNotices.committed(workspaceId));
}

/**
 * The change set of version `version`: record versions it ended (before) joined by key to the
 * ones it began (after). A record rewritten with identical data is no change.
 */
export async function changesAt(trx: Knex.Transaction, t: string, version: number, keyed: boolean): Promise<ChangeSet> {
  const params = new SqlParams();
  const v = params.add(version);
  const limit = params.add(CHANGE_SET_LIST_LIMIT);
  const { rows } = await run<{ kind: 'added' | 'changed' | 'removed'; key: string; before: Record<string, unknown> | null; after: Record<string, unknown> | null; total: string }>(
    trx,
    `WITH diff AS (
       SELECT coalesce(n.row_key, o.row_key) AS key, o.data AS before, n.data AS after,
              CASE WHEN o.row_key IS NULL THEN 'added' WHEN n.row_key IS NULL THEN 'removed' ELSE 'changed' END AS kind
       FROM (SELECT row_key, data FROM ${t} WHERE valid_to = ${v}) o
       FULL JOIN (SELECT row_key, data FROM ${t} WHERE valid_from = ${v}) n ON n.row_key = o.row_key
       WHERE o.data IS DISTINCT FROM n.data),
     ranked AS (SELECT *, row_number() OVER (PARTITION BY kind ORDER BY key) AS position, count(*) OVER (PARTITION BY kind) AS total FROM diff)
     SELECT kind, key, before, after, total FROM ranked WHERE position <= ${limit} ORDER BY kind, position`,
    params,
  );
  // Keyless tables identify records by random ids, which mean nothing to a reader.
  return changeSetOf(rows.map((row) => ({ ...row, key: keyed ? row.key : null, total: Number(row.total) })));
}

/** The table's latest snapshot, or the empty one before its first write. */
export async function currentSnapshot(ctx: CapabilityContext, rawTarget: Record<string, unknown>): Promise<SnapshotInfo> {
  const { table } = parseTarget(ctx, rawTarget);
  const schema = workspaceSchema(ctx.installation.workspaceId);
  const latest = (await tableExists(ctx.db, schema, table)) ? await latestSnapshot(ctx.db, schema, table) : undefined;
  return latest ? toSnapshotInfo(latest) : EMPTY_SNAPSHOT;
}

/** The latest snapshot of each target's table, in one statement. */
export async function currentSnapshots(ctx: CapabilityContext, rawTargets: Array<Record<string, unknown>>): Promise<SnapshotInfo[]> {
  const tables = rawTargets.map((rawTarget) => parseTarget(ctx, rawTarget).table);
  const latest = await latestSnapshots(ctx.managedTables.catalogs, ctx.db, workspaceSchema(ctx.installation.workspaceId), [...new Set(tables)]);
  return tables.map((table) => {
    const row = latest.get(table);
    return row ? toSnapshotInfo(row) : EMPTY_SNAPSHOT;
  });
}
