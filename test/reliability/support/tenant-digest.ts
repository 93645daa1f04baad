import pg from 'pg';
import { workspaceSchema } from '../../../plugins/managed-table/storage';

/**
 * One round trip that fingerprints every stored row of some workspaces: the workspace rows, every
 * row of every table with a workspace_id column (the rows test/support/fixtures.ts workspaceRows
 * compares, keys' last_used_at left out), and the managed-table catalog of each workspace (a
 * committed write always adds a snapshot there). Equal digests before and after a refused request
 * prove it wrote nothing. It runs as a prepared statement on its own connection (planning the
 * forty-way UNION costs more than running it), cheap enough to take around every fuzzed request.
 */
export interface TenantDigest {
  /** table → fingerprint of its rows. */
  tables: Record<string, string>;
}

export interface Digester {
  take(): Promise<TenantDigest>;
  close(): Promise<void>;
}

export async function tenantDigester(databaseUrl: string, workspaceIds: string[]): Promise<Digester> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const { rows } = await client.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.columns
      WHERE table_schema = current_schema() AND column_name = 'workspace_id' AND table_name <> 'charge_leases' ORDER BY table_name`,
  );
  // Every insert, update or delete gives a row version a new (xmin, ctid): their count and hash sum
  // change with any write, without serializing a single row. api_keys is the exception: its
  // last_used_at is bookkeeping written in the background, so its rows are compared without it.
  // charge_leases are left out like the request counters: taken, renewed and returned in the
  // background (callers settle the charges answered from them before a digest).
  const part = (label: string, from: string, where: string) =>
    label === 'api_keys'
      ? `SELECT '${label}' AS t, md5(coalesce(string_agg(r::text, E'\\n' ORDER BY r::text), '')) AS d FROM (SELECT to_jsonb(x) - 'last_used_at' AS r FROM ${from} x ${where}) s`
      : `SELECT '${label}' AS t, count(*) || ':' || coalesce(sum(hashtext(x.xmin::text || x.ctid::text)::bigint), 0) AS d FROM ${from} x ${where}`;
  const parts = [part('workspaces', 'workspaces', 'WHERE x.id = ANY($1::uuid[])')];
  for (const { name } of rows) parts.push(part(name, `"${name}"`, 'WHERE x.workspace_id = ANY($1::uuid[])'));
  const catalogs = workspaceIds.map((id) => workspaceSchema(id));
  const found: string[] = [];
  return {
    async take() {
      // A workspace's managed-table catalog appears with its first table (and stays): include it once it exists.
      if (found.length < catalogs.length) {
        const existing = await client.query<{ name: string }>('SELECT nspname AS name FROM pg_namespace WHERE nspname = ANY($1) ORDER BY 1', [catalogs]);
        for (const { name } of existing.rows) if (!found.includes(name)) found.push(name);
      }
      const all = [...parts];
      for (const name of found) all.push(part(`${name}._tables`, `"${name}"._tables`, ''), part(`${name}._snapshots`, `"${name}"._snapshots`, ''));
      const result = await client.query<{ t: string; d: string }>({ name: `tenant_digest_${found.length}`, text: all.join('\nUNION ALL\n'), values: [workspaceIds] });
      return { tables: Object.fromEntries(result.rows.map((r) => [r.t, r.d])) };
    },
    close: () => client.end(),
  };
}

/** Tables whose fingerprint changed between two digests. */
export function changedTables(before: TenantDigest, after: TenantDigest): string[] {
  const names = new Set([...Object.keys(before.tables), ...Object.keys(after.tables)]);
  return [...names].filter((name) => before.tables[name] !== after.tables[name]).sort();
}
