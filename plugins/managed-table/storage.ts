import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type pg from 'pg';
import { ConflictError, InputError } from '../../core/errors';
import type { SnapshotInfo } from '../capability';
import { quoteIdentifier, SqlParams, toKnexBindings } from '../sql/builder';

/**
 * Physical layout of managed tables: one PostgreSQL schema per workspace holding
 *  - `_tables`: one row per managed table (its key definition, latest version and the registry of
 *    every field name ever written; the row lock serializes writers of that table so versions are
 *    gapless and ordered),
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

export function toSnapshotInfo(row: SnapshotRow): SnapshotInfo {
  return { id: row.id, version: String(row.version), committedAt: row.committed.toISOString() };
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

/**
 * Statement texts run as named (prepared) statements, each with its name. A records read's
 * statement is parsed, analysed and planned on every call when unnamed: about 400 µs of
 * PostgreSQL's CPU, twice what it then takes to run. Named, each connection prepares it once and
 * keeps its plan. Bounded, because a name stays prepared on every pooled connection that ran it,
 * about 130 KiB of the backend's memory each (a read with a filter and an order, measured with
 * pg_backend_memory_contexts), and texts name a workspace's table, so they multiply with tables and
 * read shapes: the first 50 texts a runtime runs are named (at most ~6.5 MB per connection), later
 * ones are planned per call as before. One per runtime (ManagedTableMemory).
 */
export class PreparedStatements {
  private readonly names = new Map<string, string>();
  /** Kept per SQL text for the named ones: the same read's text is renumbered once. */
  private readonly numbered = new Map<string, NumberedStatement>();

  /**
   * A digest of the text rather than a count: runtimes that share a pool (a test's dependencies
   * beside the worker's) name texts each on their own, and a name must mean one text on every connection.
   */
  nameOf(text: string): string | undefined {
    let name = this.names.get(text);
    if (name === undefined && this.names.size < MAX_NAMED_STATEMENTS) this.names.set(text, (name = `weft_managed_read_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`));
    return name;
  }

  /**
   * A statement's text with its `$n` placeholders numbered by first use, its name, and which of the
   * caller's values it binds, in order (only the values the text uses: PostgreSQL refuses a parameter
   * it cannot type).
   */
  numberedStatement(sql: string): NumberedStatement {
    const kept = this.numbered.get(sql);
    if (kept) return kept;
    const uses: number[] = [];
    const numbers = new Map<string, number>();
    const text = sql.replace(/\$(\d+)/g, (_, index: string) => {
      let number = numbers.get(index);
      if (number === undefined) {
        uses.push(Number(index) - 1);
        numbers.set(index, (number = uses.length));
      }
      return `$${number}`;
    });
    const numbered = { text, name: this.nameOf(text), uses };
    if (numbered.name !== undefined && this.numbered.size < MAX_NAMED_STATEMENTS * 4) this.numbered.set(sql, numbered);
    return numbered;
  }
}

const MAX_NAMED_STATEMENTS = 50;

/**
 * Runs `$n`-parameterized SQL through knex. Aliases are single lower-case words, so the camelCase response mapper leaves them alone.
 * `prepared`: as a named statement (PreparedStatements, the runtime's), for statements every request runs.
 */
export async function run<T = Record<string, unknown>>(db: Knex, sql: string, params = new SqlParams(), options: { prepared?: PreparedStatements } = {}): Promise<{ rows: T[]; rowCount: number }> {
  const { prepared } = options;
  if (prepared && !db.isTransaction && db.listenerCount('query') === 0) return runOnConnection<T>(prepared, db, sql, params);
  const { sql: text, bindings } = toKnexBindings(sql, params.values);
  const raw = db.raw(text, bindings as Knex.RawBinding[]);
  const name = prepared?.nameOf(text);
  // knex hands a raw statement's options to node-postgres with its text and values.
  const result = await (name ? raw.options({ name }) : raw);
  return { rows: result.rows as T[], rowCount: (result.rowCount as number | null) ?? 0 };
}

/** knex's client, as far as lending out its pooled node-postgres connections. */
export interface ConnectionLender {
  acquireConnection(): Promise<pg.ClientBase>;
  releaseConnection(connection: pg.ClientBase): Promise<unknown>;
}

/**
 * A named statement straight on one of knex's pooled connections, without knex's query building
 * around it (placeholders rewritten to `?` and back, events, result mapping: a third of the API's
 * CPU for the statement). Only where nothing watches knex's statements (tracing listens to its
 * `query` events) and outside transactions.
 */
async function runOnConnection<T>(prepared: PreparedStatements, db: Knex, sql: string, params: SqlParams): Promise<{ rows: T[]; rowCount: number }> {
  const { text, name, uses } = prepared.numberedStatement(sql);
  const values = uses.map((index) => params.values[index]);
  const lender = db.client as unknown as ConnectionLender;
  const connection = await lender.acquireConnection();
  try {
    const result = await connection.query<T & pg.QueryResultRow>(name ? { name, text, values } : { text, values });
    return { rows: result.rows, rowCount: result.rowCount ?? 0 };
  } finally {
    await lender.releaseConnection(connection);
  }
}

/** A statement as runOnConnection runs it (PreparedStatements.numberedStatement). */
interface NumberedStatement {
  text: string;
  name: string | undefined;
  uses: number[];
}

export async function tableExists(db: Knex, schema: string, table: string): Promise<boolean> {
  const params = new SqlParams();
  const { rows } = await run<{ found: string | null }>(db, `SELECT to_regclass(${params.add(qualified(schema, table))}) AS found`, params);
  return rows[0].found !== null;
}

type CatalogState = 'missing' | 'outdated' | 'current';

/**
 * Workspace schemas whose catalog this runtime has seen committed and current. Catalogs only move
 * forward (created, then brought up to date), so once seen they are not checked again: steady-state
 * reads and writes skip catalogState. Only committed states are remembered (see remember), so a
 * rolled-back creation or upgrade is never taken for a current catalog. One per runtime
 * (ManagedTableMemory): a test that rewinds a catalog to an older layout builds another.
 */
export class CurrentCatalogs {
  private readonly schemas = new Set<string>();

  /** Has this runtime seen the workspace's catalog current (so statements may use it without a check)? */
  has(schema: string): boolean {
    return this.schemas.has(schema);
  }

  /** Marks a catalog current once `db` has committed it: never for a caller's open transaction, which may still roll back. */
  remember(db: Knex, schema: string): void {
    if (!db.isTransaction) this.schemas.add(schema);
  }
}

/** Whether the workspace catalog exists, and whether its `_tables` already has the `fields` registry (added after the first layout). */
async function catalogState(db: Knex, schema: string): Promise<CatalogState> {
  const params = new SqlParams();
  const s = quoteIdentifier(schema);
  const { rows } = await run<{ created: boolean; current: boolean }>(
    db,
    `SELECT to_regclass(${params.add(`${s}._snapshots`)}) IS NOT NULL AS created,
            EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(${params.add(`${s}._tables`)}) AND attname = 'fields' AND NOT attisdropped) AS current`,
    params,
  );
  return !rows[0].created ? 'missing' : rows[0].current ? 'current' : 'outdated';
}

/**
 * Creates the workspace schema and its catalog on first use, and brings an older catalog up to
 * date (the `fields` registry, filled from every record version already stored). Concurrent first
 * writes serialize on an advisory lock, because CREATE ... IF NOT EXISTS races otherwise. Nothing to
 * do, without a query, for a catalog this runtime has already seen current (CurrentCatalogs).
 */
async function ensureWorkspaceSchema(catalogs: CurrentCatalogs, trx: Knex.Transaction, schema: string): Promise<void> {
  if (catalogs.has(schema) || (await catalogState(trx, schema)) === 'current') return;
  const params = new SqlParams();
  await run(trx, `SELECT pg_advisory_xact_lock(hashtext('weft.managed_table'), hashtext(${params.add(schema)}))`, params);
  const state = await catalogState(trx, schema);
  if (state === 'current') return;
  const s = quoteIdentifier(schema);
  await trx.raw(`
    CREATE SCHEMA IF NOT EXISTS ${s};
    CREATE TABLE IF NOT EXISTS ${s}._tables (
      table_name text PRIMARY KEY,
      primary_key jsonb,
      latest_version bigint NOT NULL DEFAULT 0,
      fields text[] NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT now()
    );
    ALTER TABLE ${s}._tables ADD COLUMN IF NOT EXISTS fields text[] NOT NULL DEFAULT '{}';
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
  if (state === 'outdated') {
    // Tables written before the registry existed: every field of every stored version, once.
    const { rows } = await run<{ name: string }>(trx, `SELECT table_name AS name FROM ${s}._tables`);
    for (const { name } of rows) {
      if (!(await tableExists(trx, schema, name))) continue;
      const fill = new SqlParams();
      await run(
        trx,
        `UPDATE ${s}._tables SET fields = ARRAY(SELECT DISTINCT field.key FROM ${qualified(schema, name)} r, jsonb_object_keys(r.data) field(key) ORDER BY 1)
          WHERE table_name = ${fill.add(name)}`,
        fill,
      );
    }
  }
}

export interface FieldRegistry {
  fields: string[];
  primaryKey: string[] | null;
}

/**
 * The field registry of a table: every field name ever written to it (in rows or update sets,
 * whether or not a current record still has it) and its primary key, or undefined when the table
 * has never been written. Brings an older catalog up to date first (checked once per runtime).
 */
export async function fieldRegistry(catalogs: CurrentCatalogs, db: Knex, schema: string, table: string): Promise<FieldRegistry | undefined> {
  if (!catalogs.has(schema)) {
    const state = await catalogState(db, schema);
    if (state === 'missing') return undefined;
    if (state === 'outdated') await db.transaction((trx) => ensureWorkspaceSchema(catalogs, trx, schema));
    catalogs.remember(db, schema);
  }
  const params = new SqlParams();
  const { rows } = await run<{ fields: string[]; key: string[] | null }>(
    db,
    `SELECT fields, primary_key AS key FROM ${quoteIdentifier(schema)}._tables WHERE table_name = ${params.add(table)}`,
    params,
  );
  return rows[0] ? { fields: rows[0].fields, primaryKey: rows[0].key } : undefined;
}

/** Adds field names to a table's registry (inside the write's transaction, which holds the `_tables` row lock). */
export async function registerFields(trx: Knex.Transaction, schema: string, table: string, fields: string[]): Promise<void> {
  if (!fields.length) return;
  const params = new SqlParams();
  // Names travel as one JSON array: no array-literal quoting for names with commas, quotes or braces.
  const given = `ARRAY(SELECT jsonb_array_elements_text(${params.add(JSON.stringify(fields))}::jsonb))`;
  await run(
    trx,
    `UPDATE ${quoteIdentifier(schema)}._tables SET fields = ARRAY(SELECT DISTINCT f FROM unnest(fields || ${given}) f ORDER BY 1)
      WHERE table_name = ${params.add(table)} AND NOT (fields @> ${given})`,
    params,
  );
}

/**
 * Registers the table on first write (creating its storage) and locks its `_tables` row for the
 * rest of the transaction, so concurrent writers of one table take versions one after another.
 */
async function lockTableForWrite(catalogs: CurrentCatalogs, trx: Knex.Transaction, schema: string, table: string, primaryKey: string[] | null): Promise<TableState> {
  await ensureWorkspaceSchema(catalogs, trx, schema);
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

/**
 * Runs `work` in a transaction (a savepoint when `db` is already one, so the caller's rollback
 * discards the write) holding the table's write lock from lockTableForWrite.
 */
export async function inTableWrite<T>(catalogs: CurrentCatalogs, db: Knex, schema: string, table: string, primaryKey: string[] | null, work: (trx: Knex.Transaction, state: TableState) => Promise<T>): Promise<T> {
  const result = await db.transaction(async (trx) => work(trx, await lockTableForWrite(catalogs, trx, schema, table, primaryKey)));
  // Committed (unless db is a caller's transaction): the catalog the write found or brought up to date stays.
  catalogs.remember(db, schema);
  return result;
}

export async function latestSnapshot(db: Knex, schema: string, table: string): Promise<SnapshotRow | undefined> {
  return findSnapshot(db, schema, table, () => 'TRUE ORDER BY version DESC LIMIT 1');
}

/**
 * The latest snapshot of each of `tables` in one statement (SPARQL datasets check every bound
 * table on every query); a table never written is absent from the map.
 */
export async function latestSnapshots(catalogs: CurrentCatalogs, db: Knex, schema: string, tables: string[]): Promise<Map<string, SnapshotRow>> {
  if (!catalogs.has(schema)) {
    const state = await catalogState(db, schema);
    if (state === 'missing') return new Map();
    if (state === 'current') catalogs.remember(db, schema);
  }
  const params = new SqlParams();
  const s = quoteIdentifier(schema);
  const { rows } = await run<SnapshotRow & { tableName: string }>(
    db,
    `SELECT DISTINCT ON (table_name) table_name AS tablename, id, version, committed_at AS committed
       FROM ${s}._snapshots WHERE table_name = ANY(${params.add(tables)}::text[]) ORDER BY table_name, version DESC`,
    params,
  );
  return new Map(rows.map((row) => [(row as unknown as { tablename: string }).tablename, { id: row.id, version: row.version, committed: row.committed }]));
}

/** One snapshot of a table chosen by `filter` (a predicate, optionally followed by ORDER BY / LIMIT). */
export async function findSnapshot(db: Knex, schema: string, table: string, filter: (params: SqlParams) => string): Promise<SnapshotRow | undefined> {
  const params = new SqlParams();
  const tableParam = params.add(table);
  const sql = `SELECT id, version, committed_at AS committed FROM ${quoteIdentifier(schema)}._snapshots WHERE table_name = ${tableParam} AND ${filter(params)}`;
  return (await run<SnapshotRow>(db, sql, params)).rows[0];
}
