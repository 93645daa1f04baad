import { randomUUID } from 'node:crypto';
import { managedTableCapability } from '../../plugins/managed-table';
import { ManagedTableMemory } from '../../plugins/managed-table/memory';
import { PostgresTablePools } from '../../plugins/postgres-table/pool';
import { SnapshotNotices } from '../../plugins/snapshot-notices';
import type { BenchWeft } from './weft';

/**
 * One generated record per i, the same for every side of a bench. amount is a permutation of
 * 0.00 … (rows-1)/100 (7919 is prime and divides no row count used here), so an order by amount has
 * no ties and every side must return identical pages; a quarter of the records are "open". Numbers
 * are written the way JSON.stringify writes them (trim_scale), as a run staging JSON records would store them.
 */
export function recordSql(rows: number): string {
  const step = 7919;
  if (rows % step === 0) throw new Error(`--rows must not be a multiple of ${step}`);
  return `jsonb_build_object(
      'id', i,
      'account', 'acct-' || lpad((i % 5000)::text, 4, '0'),
      'status', (ARRAY['open', 'closed', 'pending', 'refunded'])[1 + (i * 3) % 4],
      'amount', trim_scale(round(((i::bigint * ${step}) % ${rows}) / 100.0, 2)),
      'currency', (ARRAY['EUR', 'USD', 'GBP'])[1 + i % 3],
      'created_at', to_char(timestamptz '2024-01-01 00:00:00+00' + i * interval '17 seconds', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'note', 'order ' || i || ' placed through the web shop')`;
}

/** A managed table of the tenant as a committed run leaves it: the capability's commit path, with the staged relation generated in SQL. */
export async function fillManagedTable(weft: BenchWeft, table: string, rows: number): Promise<void> {
  const { tenant } = weft;
  const ctx = { installation: { id: tenant.managedInstallationId, workspaceId: tenant.workspaceId, settings: {}, credentials: {} }, db: weft.db, managedTables: new ManagedTableMemory(weft.db), postgresTablePools: new PostgresTablePools(), snapshotNotices: new SnapshotNotices() };
  const relation = () => `SELECT jsonb_build_array(i)::text AS row_key, ${recordSql(rows)} AS data FROM generate_series(1, ${rows}) i`;
  const result = await managedTableCapability.commitStagedWrite!(ctx, { table, primaryKey: ['id'] }, {
    mode: 'append',
    rows: { relation, batches: () => { throw new Error('a managed table commits from the relation'); } },
    provenance: { kind: 'run', id: randomUUID() },
  });
  if (result.affected !== rows) throw new Error(`the fill wrote ${result.affected} records, not ${rows}`);
}
