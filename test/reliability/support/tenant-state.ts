import { env } from '../../support/environment';
import { workspaceRows } from '../../support/fixtures';

/**
 * Everything stored for some workspaces, to prove that refused requests changed nothing:
 *  - every row of every table with a workspace_id column (fixtures.ts workspaceRows),
 *  - every row of the tables without one that hang off such a table by a foreign key
 *    (versions, branches, decisions, charges, run nodes…), found in the catalog so new child
 *    tables join automatically,
 *  - the managed tables of each workspace (its own PostgreSQL schema: catalog, snapshots, records).
 * Bookkeeping that every request writes (request-limit counters, keys' last_used_at) is left out.
 */
export async function tenantState(workspaceIds: string[]): Promise<Record<string, unknown[]>> {
  const db = env().db;
  const state: Record<string, unknown[]> = await workspaceRows(workspaceIds);
  const rowsOf = async (key: string, sql: string, bindings: unknown[]) => {
    const result = await db.raw(`SELECT coalesce(json_agg(r.row ORDER BY r.row::text), '[]'::json) AS rows FROM (${sql}) r`, bindings as never);
    state[key] = result.rows[0].rows as unknown[];
  };
  for (const child of await childTables()) {
    await rowsOf(
      `${child.table} (via ${child.parent})`,
      `SELECT to_jsonb(t) AS row FROM "${child.table}" t WHERE t."${child.column}" IN (SELECT p."${child.parentColumn}" FROM "${child.parent}" p WHERE p.workspace_id = ANY(?::uuid[]))`,
      [workspaceIds],
    );
  }
  for (const workspaceId of workspaceIds) {
    const schema = `weft_ws_${workspaceId.replace(/-/g, '')}`;
    const tables = await db.raw('SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ? ORDER BY 1', [schema]);
    for (const { name } of tables.rows as Array<{ name: string }>) {
      await rowsOf(`${schema}.${name}`, `SELECT to_jsonb(t) AS row FROM "${schema}"."${name}" t`, []);
    }
  }
  return state;
}

interface ChildTable {
  table: string;
  column: string;
  parent: string;
  parentColumn: string;
}

let children: ChildTable[] | undefined;

/** Tables without workspace_id whose single-column foreign key points into a table that has one. */
export async function childTables(): Promise<ChildTable[]> {
  if (children) return children;
  const result = await env().db.raw(`
    SELECT DISTINCT ON (child.relname) child.relname AS "table", ca.attname AS "column", parent.relname AS parent, pa.attname AS "parentColumn"
      FROM pg_constraint c
      JOIN pg_class child ON child.oid = c.conrelid
      JOIN pg_class parent ON parent.oid = c.confrelid
      JOIN pg_namespace n ON n.oid = child.relnamespace AND n.nspname = current_schema()
      JOIN pg_attribute ca ON ca.attrelid = c.conrelid AND ca.attnum = c.conkey[1]
      JOIN pg_attribute pa ON pa.attrelid = c.confrelid AND pa.attnum = c.confkey[1]
     WHERE c.contype = 'f' AND array_length(c.conkey, 1) = 1
       AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = child.oid AND a.attname = 'workspace_id' AND NOT a.attisdropped)
       AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = parent.oid AND a.attname = 'workspace_id' AND NOT a.attisdropped)
     ORDER BY child.relname, parent.relname`);
  children = result.rows as ChildTable[];
  return children;
}

/** The names of the tables that differ between two states, with a short sample of each difference. */
export function stateDifferences(before: Record<string, unknown[]>, after: Record<string, unknown[]>): string[] {
  const out: string[] = [];
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const a = JSON.stringify(before[key] ?? []);
    const b = JSON.stringify(after[key] ?? []);
    if (a === b) continue;
    const gone = (before[key] ?? []).filter((row) => !(after[key] ?? []).some((other) => JSON.stringify(other) === JSON.stringify(row)));
    const added = (after[key] ?? []).filter((row) => !(before[key] ?? []).some((other) => JSON.stringify(other) === JSON.stringify(row)));
    out.push(`${key}: -${JSON.stringify(gone).slice(0, 600)} +${JSON.stringify(added).slice(0, 600)}`);
  }
  return out;
}
