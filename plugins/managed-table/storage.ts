import type { Knex } from 'knex';
import { ConflictError, InputError } from '../../core/errors';
import { quoteIdentifier, SqlParams, toKnexBindings } from '../sql/builder';

/**
 * Physical layout of managed tables: one PostgreSQL schema per workspace holding
 *  - `_tables`: one row per managed table (its key definition and latest version; the row lock
 *    serializes writers of that table so versions are gapless and ordered),
 *  - `_snapshots`: one row per committed write (id, version, commit time, provenance),
 *  - one table per managed table with every version of every record: a record version is
 *    visible at snapshot V when valid_from <= V and (valid_to is null or valid_to > V).
 * Names starting with `_` cannot collide with user tables (those start with a letter).
 */

export interface TableState {
  latestVersion: number;
  primaryKey: string[] | null;
}

export interface SnapshotRow {
  id: string;
  version: number;
  committed: Date;
}

export function workspaceSchema(workspaceId: string): string {
  const hex = workspaceId.replace(/-/g, '').toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(hex)) throw new InputError('invalid_workspace', 'The installation has no valid workspace id.');
  return `weft_ws_${hex}`;
}

/** Schema-qualified, quoted table name. `table` is already validated against the target pattern. */
export function qualified(schema: string, table: string): string {
  return `${quoteIdentifier(schema)}.${quoteIdentifier(table)}`;
}

/** Runs `$n`-parameterized SQL through knex. Aliases are single lower-case words, so the camelCase response mapper leaves them alone. */
export async function run<T = Record<string, unknown>>(db: Knex, sql: string, params = new SqlParams()): Promise<{ rows: T[]; rowCount: number }> {
  const { sql: text, bindings } = toKnexBindings(sql, params.values);
  const result = await db.raw(text, bindings as Knex.RawBinding[]);
  return { rows: result.rows as T[], rowCount: (result.rowCount as number | null) ?? 0 };
}

export async function tableExists(db: Knex, schema: string, table: string): Promise<boolean> {
  const params = new SqlParams();
  const { rows } = await run<{ found: string | null }>(db, `SELECT to_regclass(${params.add(qualified(schema, table))}) AS found`, params);
  return rows[0].found !== null;
}

/** Creates the workspace schema and its catalog on first use. Concurrent first writes serialize on an advisory lock, because CREATE ... IF NOT EXISTS races otherwise. */
async function ensureWorkspaceSchema(trx: Knex.Transaction, schema: string): Promise<void> {
  if (await tableExists(trx, schema, '_snapshots')) return;
  const params = new SqlParams();
  await run(trx, `SELECT pg_advisory_xact_lock(hashtext('weft.managed_table'), hashtext(${params.add(schema)}))`, params);
  const s = quoteIdentifier(schema);
  await trx.raw(`
    CREATE SCHEMA IF NOT EXISTS ${s};
    CREATE TABLE IF NOT EXISTS ${s}._tables (
      table_name text PRIMARY KEY,
      primary_key jsonb,
      latest_version bigint NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE IF NOT EXISTS ${s}._snapshots (
      id uuid PRIMARY KEY,
      table_name text NOT NULL REFERENCES ${s}._tables ON DELETE CASCADE,
      version bigint NOT NULL,
      committed_at timestamptz NOT NULL,
      operation text NOT NULL,
      affected integer NOT NULL,
      produced_by_kind text NOT NULL,
      produced_by_id text NOT NULL,
      UNIQUE (table_name, version)
    );
    CREATE INDEX IF NOT EXISTS _snapshots_committed ON ${s}._snapshots (table_name, committed_at);`);
}

/**
 * Registers the table on first write (creating its storage) and locks its `_tables` row for the
 * rest of the transaction, so concurrent writers of one table take versions one after another.
 */
export async function lockTableForWrite(trx: Knex.Transaction, schema: string, table: string, primaryKey: string[] | null): Promise<TableState> {
  await ensureWorkspaceSchema(trx, schema);
  const s = quoteIdentifier(schema);
  const register = new SqlParams();
  const created = await run(trx, `INSERT INTO ${s}._tables (table_name, primary_key) VALUES (${register.add(table)}, ${register.add(JSON.stringify(primaryKey))}::jsonb) ON CONFLICT DO NOTHING RETURNING table_name AS name`, register);
  if (created.rowCount) {
    // Only the transaction that inserted the catalog row creates storage; index names are left to
    // PostgreSQL because names derived from 63-character table names would be truncated and clash.
    const t = qualified(schema, table);
    await trx.raw(`
      CREATE TABLE ${t} (
        row_key text NOT NULL,
        data jsonb NOT NULL,
        valid_from bigint NOT NULL,
        valid_to bigint,
        produced_by_kind text NOT NULL,
        produced_by_id text NOT NULL,
        produced_at timestamptz NOT NULL,
        PRIMARY KEY (row_key, valid_from)
      );
      CREATE UNIQUE INDEX ON ${t} (row_key) WHERE valid_to IS NULL;
      CREATE INDEX ON ${t} (valid_to);`);
  }
  const lock = new SqlParams();
  const { rows } = await run<{ latest: number; key: string[] | null }>(trx, `SELECT latest_version AS latest, primary_key AS key FROM ${s}._tables WHERE table_name = ${lock.add(table)} FOR UPDATE`, lock);
  const state = { latestVersion: rows[0].latest, primaryKey: rows[0].key };
  if (JSON.stringify(state.primaryKey) !== JSON.stringify(primaryKey)) {
    throw new ConflictError('primary_key_mismatch', `The managed table "${table}" was created with primary key ${JSON.stringify(state.primaryKey)}, but the target declares ${JSON.stringify(primaryKey)}. Record keys cannot change after the first write.`);
  }
  return state;
}

export async function latestSnapshot(db: Knex, schema: string, table: string): Promise<SnapshotRow | undefined> {
  return findSnapshot(db, schema, table, () => 'TRUE ORDER BY version DESC LIMIT 1');
}

/** One snapshot of a table chosen by `filter` (a predicate, optionally followed by ORDER BY / LIMIT). */
export async function findSnapshot(db: Knex, schema: string, table: string, filter: (params: SqlParams) => string): Promise<SnapshotRow | undefined> {
  const params = new SqlParams();
  const tableParam = params.add(table);
  const sql = `SELECT id, version, committed_at AS committed FROM ${quoteIdentifier(schema)}._snapshots WHERE table_name = ${tableParam} AND ${filter(params)}`;
  return (await run<SnapshotRow>(db, sql, params)).rows[0];
}
