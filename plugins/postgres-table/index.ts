import pg from 'pg';
import { DomainError, InputError, NotFoundError } from '../../core/errors';
import { validateWithSchema } from '../../core/schema-validator';
import { sameSnapshot, TABLE_ROLES } from '../capability';
import type { CapabilityContext, CapabilityDefinition, CapabilityRuntime, CheckResult, DiscoveredSchema, FieldDescription, RecordsPage, RecordsQuery, SnapshotInfo, StagedWriteRequest, WriteRequest, WriteResult } from '../capability';
import { comparisonOperators, compileWhere, ConditionDialect, quoteIdentifier, SqlParams } from '../sql/builder';
import { FieldUse, queryFieldUses, refuseUnknownFields } from '../sql/fields';
import { cursorSelect, decodeCursor, KeysetColumn, keysetAfter, orderByClause, orderOf, TableCursor } from '../sql/keyset';
import { ChangeRow, changeSetOf, checkWriteRequest, DryRunRollback, primaryKeyValues, snapshotConflict, unlessDryRun } from '../sql/write-request';
import { isConnectionFailure, remoteError, scrub } from './errors';
import { remoteInfo, settingsOf } from './pool';

export { PostgresTablePools, vetAddress, connectionConfig, settingsOf } from './pool';
export { remoteError } from './errors';

const identifier = { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_$]{0,62}$' };

const definition: CapabilityDefinition = {
  name: 'postgres_table',
  version: '1.0.0',
  title: 'PostgreSQL table',
  description: 'A table or view in an external PostgreSQL database. The installation holds the connection; an endpoint names the table.',
  roles: TABLE_ROLES,
  targetSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['table'],
    properties: {
      schema: { ...identifier, default: 'public', description: 'PostgreSQL schema of the table, as named in the catalog (case-sensitive).' },
      table: { ...identifier, description: 'Table or view name, as named in the catalog (case-sensitive).' },
    },
  },
  installationSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['host', 'database', 'user'],
    properties: {
      host: { type: 'string', minLength: 1, maxLength: 255, description: 'Server host name or address.' },
      port: { type: 'integer', minimum: 1, maximum: 65535, default: 5432, description: 'Server port.' },
      database: { type: 'string', minLength: 1, maxLength: 63, description: 'Database name.' },
      user: { type: 'string', minLength: 1, maxLength: 63, description: 'Role to connect as; its grants bound what endpoints can read and write.' },
      password: { type: 'string', maxLength: 1000, 'x-weft-secret': true, description: 'Password of the role (stored encrypted).' },
      ssl: { type: 'boolean', default: false, description: 'Connect with TLS and verify the server certificate.' },
      allowPrivateNetwork: {
        type: 'boolean',
        default: false,
        description: 'Allow loopback, private, link-local and other non-public addresses. Off by default to prevent connections into internal networks. Weft’s own database is refused either way.',
      },
    },
  },
  accepts: ['json'],
  emits: ['json'],
  supports: { recordsRead: true, orderedReads: true, fieldCatalog: true, snapshotReads: false, provenanceReads: false, transactionalWrites: true, schemaDiscovery: true, connectionCheck: true },
};

interface TableRef {
  schema: string;
  table: string;
  /** Quoted, schema-qualified name for SQL text. */
  sql: string;
}

/** Stored targets were validated on save; checking again fills the schema default and guards older rows. Works on a copy. */
function parseTarget(target: Record<string, unknown>): TableRef {
  const { schema, table } = validateWithSchema<{ schema: string; table: string }>(definition.targetSchema, structuredClone(target), 'postgres_table target', { code: 'invalid_target' });
  return { schema, table, sql: `${quoteIdentifier(schema)}.${quoteIdentifier(table)}` };
}

export interface Column {
  name: string;
  type: string;
  nullable: boolean;
}

interface TableShape {
  columns: Map<string, Column>;
  primaryKey: string[];
}

/** A pool or checked-out client of one installation, with what its error messages may say. */
interface Remote {
  client: pg.Pool | pg.PoolClient;
  installation: CapabilityContext['installation'];
}

/** Maps any failure of a remote call to a business error (see remoteError); never leaks the password. */
function mapped(remote: Pick<Remote, 'installation'>, error: unknown): unknown {
  return remoteError(error, remoteInfo(settingsOf(remote.installation)));
}

/** Runs one statement on the remote database; every remote call goes through here. */
async function remote<T extends pg.QueryResultRow>(target: Remote, sql: string, params?: SqlParams | unknown[]): Promise<pg.QueryResult<T>> {
  try {
    return await target.client.query<T>(sql, Array.isArray(params) ? params : params?.values);
  } catch (error) {
    throw mapped(target, error);
  }
}

/** The installation's pool at its vetted address; address refusals and resolution failures are already business errors. */
async function poolOf(ctx: CapabilityContext): Promise<pg.Pool> {
  try {
    return await ctx.postgresTablePools.poolFor(ctx.installation);
  } catch (error) {
    throw mapped(ctx, error);
  }
}

async function connect(ctx: CapabilityContext): Promise<Remote> {
  return { client: await poolOf(ctx), installation: ctx.installation };
}

/** Columns from information_schema (only those the role may see) and the primary key from pg_index, in key order. */
async function describeTable(client: Remote, ref: TableRef): Promise<TableShape> {
  const columns = await remote<{ name: string; type: string; udt: string; nullable: boolean }>(
    client,
    `SELECT column_name AS name, data_type AS type, udt_name AS udt, is_nullable = 'YES' AS nullable
       FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`,
    [ref.schema, ref.table],
  );
  if (!columns.rowCount) throw new NotFoundError('table', `No table or view ${ref.schema}.${ref.table} visible to the installation's role.`);
  const key = await remote<{ name: string }>(
    client,
    `SELECT a.attname AS name FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
      WHERE i.indrelid = to_regclass(quote_ident($1) || '.' || quote_ident($2)) AND i.indisprimary
      ORDER BY array_position(i.indkey::int2[], a.attnum)`,
    [ref.schema, ref.table],
  );
  const typeName = (c: { type: string; udt: string }) => (c.type === 'ARRAY' ? `${c.udt.replace(/^_/, '')}[]` : c.type === 'USER-DEFINED' ? c.udt : c.type);
  return {
    columns: new Map(columns.rows.map((c) => [c.name, { name: c.name, type: typeName(c), nullable: c.nullable }])),
    primaryKey: key.rows.map((r) => r.name),
  };
}

/** Every field name must be a real column: the only way a name reaches SQL text (quoted) is after this check. */
function checkFields(shape: TableShape, uses: FieldUse[]): void {
  refuseUnknownFields(uses, [...shape.columns.keys()], 'column');
}

/** json columns take JSON text, so arrays and scalars are stored as JSON rather than as PostgreSQL arrays. */
function toParam(column: Column | undefined, value: unknown): unknown {
  return column && (column.type === 'json' || column.type === 'jsonb') && value !== null ? JSON.stringify(value) : value;
}

function columnConditions(shape: TableShape): ConditionDialect {
  return {
    compare(field, op, value, params) {
      const column = quoteIdentifier(field);
      if (value === null) return op === 'eq' ? `${column} IS NULL` : `${column} IS NOT NULL`;
      const bound = params.add(toParam(shape.columns.get(field), value));
      // ne keeps NULLs: a missing value is not equal to the given one (same as managed_table).
      return op === 'ne' ? `${column} IS DISTINCT FROM ${bound}` : `${column} ${comparisonOperators[op]} ${bound}`;
    },
    isIn(field, values, params) {
      const column = quoteIdentifier(field);
      const present = values.filter((value) => value !== null).map((value) => toParam(shape.columns.get(field), value));
      const parts = present.length ? [`${column} = ANY(${params.add(present)})`] : [];
      if (present.length < values.length) parts.push(`${column} IS NULL`);
      return parts.join(' OR ');
    },
    exists: (field) => `${quoteIdentifier(field)} IS NOT NULL`,
  };
}

// Types without a default b-tree ordering cannot appear in ORDER BY.
const unorderable = new Set(['json', 'xml', 'point', 'line', 'lseg', 'box', 'path', 'polygon', 'circle']);

async function readRecords(ctx: CapabilityContext, target: Record<string, unknown>, query: RecordsQuery): Promise<RecordsPage> {
  if (query.snapshotId !== undefined || query.asOf !== undefined) {
    throw new InputError('snapshot_not_supported', 'postgres_table reads the live table: snapshotId and asOf are not supported.');
  }
  const ref = parseTarget(target);
  const pool = await connect(ctx);
  // The one description of the table this read makes: field checks, conditions and paging all use it.
  const shape = await describeTable(pool, ref);
  checkFields(shape, queryFieldUses(query));
  const cursor = query.after === undefined || query.after === null ? undefined : decodeCursor(query.after, query.orderBy);
  const params = new SqlParams();
  const where = compileWhere(query.where, columnConditions(shape), params);
  const select = (query.select ?? [...shape.columns.keys()]).map(quoteIdentifier).join(', ');
  const ordered = new Set(query.orderBy.map((t) => t.field));
  const orderColumns = (names: string[]) => names.filter((name) => !ordered.has(name)).map((name): KeysetColumn => ({ sql: quoteIdentifier(name), direction: 'asc', nullable: shape.columns.get(name)!.nullable }));
  const requested = query.orderBy.map((t): KeysetColumn => ({ sql: quoteIdentifier(t.field), direction: t.direction, nullable: shape.columns.get(t.field)!.nullable }));
  const limit = params.add(query.limit + 1);

  if (shape.primaryKey.length) {
    // Keyset paging: the primary key completes the order, so a page resumes exactly after the last row,
    // however rows are inserted or deleted in between.
    const keyset = [...requested, ...orderColumns(shape.primaryKey)];
    if (cursor && !cursor.key) throw new InputError('invalid_continuation', 'The continuation was made for a table without a primary key. Start again without it.');
    const after = cursor?.key ? keysetAfter(keyset, cursor.key, params) : 'TRUE';
    const { rows } = await remote(pool, `SELECT ${select}, ${cursorSelect(keyset)} AS "__weft_position" FROM ${ref.sql} WHERE (${where}) AND (${after}) ORDER BY ${orderByClause(keyset)} LIMIT ${limit}`, params);
    const page = rows.slice(0, query.limit);
    const records = page.map(({ __weft_position: _position, ...record }) => record);
    const continuation: TableCursor | null = rows.length > query.limit ? { order: orderOf(query.orderBy), key: page[page.length - 1].__weft_position } : null;
    return { records, continuation };
  }

  // No primary key (a view, a heap table): rows have no unique, stable position to resume after, and
  // ctid changes with updates and VACUUM FULL. The order is made as deterministic as the columns
  // allow and pages use OFFSET, which can skip or repeat rows if the table changes between pages.
  const order = [...requested, ...orderColumns([...shape.columns.values()].filter((c) => !unorderable.has(c.type)).map((c) => c.name))];
  if (cursor && cursor.offset === undefined) throw new InputError('invalid_continuation', 'The continuation was made for a table with a primary key. Start again without it.');
  const offset = cursor?.offset ?? 0;
  const { rows } = await remote(pool, `SELECT ${select} FROM ${ref.sql} WHERE (${where}) ORDER BY ${orderByClause(order)} LIMIT ${limit} OFFSET ${params.add(offset)}`, params);
  const records = rows.slice(0, query.limit);
  return { records, continuation: rows.length > query.limit ? { order: orderOf(query.orderBy), offset: offset + query.limit } : null };
}

/** PostgreSQL's bound parameters per statement at most (the protocol counts them in 16 bits). */
const MAX_PARAMETERS = 65_535;
/** Rows per INSERT at most, however narrow the table: longer statements save little more. */
const MAX_ROWS_PER_INSERT = 1_000;

/** Rows per INSERT of `columns` columns: as many as fit the parameter bound (40 at PostgreSQL's 1,600 columns), at most 1,000. */
export const rowsPerInsert = (columns: number): number => Math.max(1, Math.min(MAX_ROWS_PER_INSERT, Math.floor(MAX_PARAMETERS / Math.max(1, columns))));

/** INSERT of rows sharing one column set (mixing sets would overwrite omitted columns with defaults on upsert). */
function insertStatement(ref: TableRef, shape: TableShape, columns: string[], rows: Array<Record<string, unknown>>, upsert: boolean): { sql: string; params: SqlParams } {
  const params = new SqlParams();
  const tuples = rows.map((row) => `(${columns.map((name) => params.add(toParam(shape.columns.get(name), row[name]))).join(', ')})`);
  let sql = `INSERT INTO ${ref.sql} AS weft_row (${columns.map(quoteIdentifier).join(', ')}) VALUES ${tuples.join(', ')}`;
  if (upsert) {
    const updates = columns.filter((name) => !shape.primaryKey.includes(name)).map((name) => `${quoteIdentifier(name)} = EXCLUDED.${quoteIdentifier(name)}`);
    sql += ` ON CONFLICT (${shape.primaryKey.map(quoteIdentifier).join(', ')}) ${updates.length ? `DO UPDATE SET ${updates.join(', ')}` : 'DO NOTHING'}`;
  }
  return { sql, params };
}

/** A row's primary key as a JSON array of its values (as to_jsonb gives them), or null for a table without one. */
const keyOf = (shape: TableShape, row: Record<string, unknown>): string | null => (shape.primaryKey.length ? JSON.stringify(shape.primaryKey.map((name) => row[name])) : null);

/**
 * Applies one operation; with `changes`, also collects every row it adds, changes or removes with
 * its values before and after (RETURNING, so the rows are exactly those the statement touched).
 */
async function applyWrite(client: Remote, ref: TableRef, shape: TableShape, request: WriteRequest, changes?: ChangeRow[]): Promise<number> {
  const conditions = columnConditions(shape);
  switch (request.operation) {
    case 'append':
    case 'upsert': {
      const rows = request.rows ?? [];
      checkFields(shape, rows.flatMap((row, i) => Object.keys(row).map((field) => ({ path: `/rows/${i}/${field}`, field }))));
      if (request.operation === 'upsert') primaryKeyValues(rows, shape.primaryKey);
      const previous = changes && request.operation === 'upsert' ? await currentRowsByKey(client, ref, shape, rows) : new Map<string, Record<string, unknown>>();
      const groups = new Map<string, Array<Record<string, unknown>>>();
      for (const row of rows) {
        const columns = JSON.stringify(Object.keys(row).sort());
        groups.set(columns, [...(groups.get(columns) ?? []), row]);
      }
      let affected = 0;
      for (const [columns, group] of groups) {
        const names = JSON.parse(columns) as string[];
        const perStatement = rowsPerInsert(names.length);
        for (let start = 0; start < group.length; start += perStatement) {
          const { sql, params } = insertStatement(ref, shape, names, group.slice(start, start + perStatement), request.operation === 'upsert');
          const result = await remote<{ after: Record<string, unknown> }>(client, changes ? `${sql} RETURNING to_jsonb(weft_row) AS after` : sql, params);
          affected += result.rowCount ?? 0;
          for (const { after } of changes ? result.rows : []) {
            const key = keyOf(shape, after);
            const before = key === null ? undefined : previous.get(key);
            changes!.push(before ? { kind: 'changed', key, before, after } : { kind: 'added', key, before: null, after });
          }
        }
      }
      // An upsert that rewrote a row with its own values changed nothing.
      if (changes) changes.splice(0, changes.length, ...changes.filter((c) => c.kind !== 'changed' || JSON.stringify(c.before) !== JSON.stringify(c.after)));
      return affected;
    }
    case 'update': {
      const set = request.set ?? {};
      checkFields(shape, [...Object.keys(set).map((field) => ({ path: `/set/${field}`, field })), ...(request.where ?? []).map((c, i) => ({ path: `/where/${i}/field`, field: c.field }))]);
      const params = new SqlParams();
      const assignments = Object.entries(set).map(([name, value]) => `${quoteIdentifier(name)} = ${params.add(toParam(shape.columns.get(name), value))}`);
      const where = compileWhere(request.where ?? [], conditions, params);
      if (!changes) return (await remote(client, `UPDATE ${ref.sql} SET ${assignments.join(', ')} WHERE ${where}`, params)).rowCount ?? 0;
      // The old row comes from a self-join on ctid, the new one from RETURNING: a pair per row, with or without a primary key.
      const result = await remote<{ before: Record<string, unknown>; after: Record<string, unknown> }>(
        client,
        `UPDATE ${ref.sql} AS weft_row SET ${assignments.join(', ')}
         FROM (SELECT ctid AS weft_ctid, to_jsonb(old) AS before FROM ${ref.sql} old WHERE ${where}) weft_old
         WHERE weft_row.ctid = weft_old.weft_ctid RETURNING weft_old.before, to_jsonb(weft_row) AS after`,
        params,
      );
      for (const { before, after } of result.rows) {
        if (JSON.stringify(before) !== JSON.stringify(after)) changes.push({ kind: 'changed', key: keyOf(shape, after), before, after });
      }
      return result.rowCount ?? 0;
    }
    case 'delete': {
      checkFields(shape, (request.where ?? []).map((c, i) => ({ path: `/where/${i}/field`, field: c.field })));
      const params = new SqlParams();
      const where = compileWhere(request.where ?? [], conditions, params);
      const result = await remote<{ before: Record<string, unknown> }>(client, `DELETE FROM ${ref.sql} AS weft_row WHERE ${where}${changes ? ' RETURNING to_jsonb(weft_row) AS before' : ''}`, params);
      for (const { before } of changes ? result.rows : []) changes!.push({ kind: 'removed', key: keyOf(shape, before), before, after: null });
      return result.rowCount ?? 0;
    }
  }
}

/** The current rows an upsert's rows would replace, by primary key. */
async function currentRowsByKey(client: Remote, ref: TableRef, shape: TableShape, rows: Array<Record<string, unknown>>): Promise<Map<string, Record<string, unknown>>> {
  const params = new SqlParams();
  const keys = rows.map((row) => `(${shape.primaryKey.map((name) => params.add(toParam(shape.columns.get(name), row[name]))).join(', ')})`);
  const columns = shape.primaryKey.map(quoteIdentifier).join(', ');
  const { rows: found } = await remote<{ row: Record<string, unknown> }>(client, `SELECT to_jsonb(current) AS row FROM ${ref.sql} current WHERE (${columns}) IN (${keys.join(', ')})`, params);
  return new Map(found.map(({ row }) => [keyOf(shape, row)!, row]));
}

/**
 * A live table keeps no history, so its snapshot is a digest of its contents, independent of row
 * order: any change by anyone moves it. id "md5:<digest>", version the row count.
 *
 * Each row's to_jsonb text is hashed twice to 64 bits (hashtextextended with two seeds, the stable
 * hash PostgreSQL's hash partitioning relies on) and each hash is summed over the table (as numeric:
 * no overflow): one streaming pass in constant memory, with no sort and no string of the whole table
 * (a string_agg of per-row md5s failed past PostgreSQL's 1 GB value limit and sorted every row
 * first; this takes about 0.65 of its time on a million rows). Sums, unlike XOR, keep repeated rows:
 * two equal rows do not cancel out. The digest is the md5 of the count and both sums. Reading it
 * still costs one scan of the table.
 */
async function contentSnapshot(client: Remote, ref: TableRef): Promise<SnapshotInfo> {
  const { rows } = await remote<{ digest: string; count: string }>(
    client,
    `SELECT md5(concat_ws(':', count(*), coalesce(sum(hashtextextended(row_text, 0)), 0), coalesce(sum(hashtextextended(row_text, 1)), 0))) AS digest, count(*) AS count
       FROM (SELECT to_jsonb(r)::text AS row_text FROM ${ref.sql} r) rows_as_text`,
  );
  return { id: `md5:${rows[0].digest}`, version: String(rows[0].count), committedAt: null };
}

/** What bounds a remote transaction besides the pool's own timeouts. */
interface SessionLimits {
  readOnly?: boolean;
  /** Every statement sees the one snapshot of the first (REPEATABLE READ): reads in rounds agree. */
  repeatable?: boolean;
  /** The statements' time limit (SET LOCAL statement_timeout), below the pool's. */
  timeoutMs?: number;
  /** Aborted when the caller has gone: the running statement is cancelled at once. */
  signal?: AbortSignal;
}

/** Runs `work` in one remote transaction on a checked-out connection: committed, or rolled back on any failure. */
async function inRemoteTransaction<T>(ctx: CapabilityContext, work: (session: Remote) => Promise<T>, limits: SessionLimits = {}): Promise<T> {
  const pool = await poolOf(ctx);
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw mapped(ctx, error);
  }
  const session: Remote = { client, installation: ctx.installation };
  const { signal } = limits;
  let broken: Error | undefined;
  let cancel: (() => void) | undefined;
  try {
    await remote(session, `BEGIN${limits.repeatable ? ' ISOLATION LEVEL REPEATABLE READ' : ''}${limits.readOnly ? ' READ ONLY' : ''}`);
    if (limits.timeoutMs !== undefined) await remote(session, `SET LOCAL statement_timeout = ${Math.max(1, Math.floor(limits.timeoutMs))}`);
    if (signal) {
      const { rows } = await remote<{ pid: number }>(session, 'SELECT pg_backend_pid() AS pid');
      cancel = () => void cancelBackend(pool, rows[0].pid);
      signal.addEventListener('abort', cancel, { once: true });
      if (signal.aborted) cancel();
    }
    const result = await work(session);
    await remote(session, 'COMMIT');
    return result;
  } catch (error) {
    // A connection that failed is discarded rather than returned to the pool.
    if (isConnectionFailure(error) && !isCancelled(error)) broken = error as Error;
    else await client.query('ROLLBACK').catch((rollback: Error) => (broken = rollback));
    throw error;
  } finally {
    if (cancel) signal!.removeEventListener('abort', cancel);
    client.release(broken);
  }
}

/** A statement stopped by its time limit or a cancel (57014), as remoteError maps it. */
const isCancelled = (error: unknown): boolean => error instanceof DomainError && error.details?.reason === '57014';

/**
 * Cancels a statement of one of the pool's connections from a connection of its own, with the
 * pool's settings (as libpq's PQcancel opens one): a cancel never waits for a pooled connection.
 */
async function cancelBackend(pool: pg.Pool, pid: number): Promise<void> {
  // The pool's own settings (max, idle timeout) mean nothing to a client; pg-pool keeps the password out of the enumerable ones.
  const canceller = new pg.Client({ ...(pool.options as pg.ClientConfig), password: pool.options.password });
  canceller.on('error', () => undefined);
  try {
    await canceller.connect();
    await canceller.query('SELECT pg_cancel_backend($1)', [pid]);
  } catch {
    // The statement timeout stops it anyway.
  } finally {
    await canceller.end().catch(() => undefined);
  }
}

/** A read-only remote session as SQL over the installation's tables sees it. */
export interface RemoteReads {
  /** The rows of one statement (values only as parameters). */
  query<T extends pg.QueryResultRow = Record<string, unknown>>(sql: string, values: unknown[]): Promise<T[]>;
  /** An endpoint target's table: its quoted name, its columns (with their types as information_schema names them) and primary key. */
  describe(target: Record<string, unknown>): Promise<{ sql: string; columns: Map<string, Column>; primaryKey: string[] }>;
}

/**
 * Runs `work` on the installation's database in a read-only transaction whose statements stop at
 * `timeoutMs` and are cancelled when `signal` aborts; a statement stopped so fails with
 * `stopped(callerGone)`. Nothing here writes or defines anything on the remote database.
 */
export async function readingRemote<T>(ctx: CapabilityContext, limits: { timeoutMs: number; signal?: AbortSignal; stopped: (callerGone: boolean) => Error; repeatable?: boolean }, work: (reads: RemoteReads) => Promise<T>): Promise<T> {
  const gone = () => Boolean(limits.signal?.aborted);
  if (gone()) throw limits.stopped(true);
  try {
    return await inRemoteTransaction(ctx, (session) => gone() ? Promise.reject(limits.stopped(true)) : work({
      query: async <R extends pg.QueryResultRow>(sql: string, values: unknown[]) => (await remote<R>(session, sql, values)).rows,
      describe: async (target) => {
        const ref = parseTarget(target);
        return { sql: ref.sql, ...(await describeTable(session, ref)) };
      },
    }), { readOnly: true, repeatable: limits.repeatable, timeoutMs: limits.timeoutMs, signal: limits.signal });
  } catch (error) {
    if (isCancelled(error)) throw limits.stopped(gone());
    throw error;
  }
}

async function writeRecords(ctx: CapabilityContext, target: Record<string, unknown>, request: WriteRequest): Promise<WriteResult> {
  const ref = parseTarget(target);
  return unlessDryRun(() => inRemoteTransaction(ctx, async (session) => {
    const shape = await describeTable(session, ref);
    checkWriteRequest(request, shape.primaryKey.length ? shape.primaryKey : null);
    const checked = request.expectedSnapshot !== undefined || request.dryRun;
    let before: SnapshotInfo | undefined;
    if (checked) {
      // Holds off every other writer (and other checked writes) until COMMIT, so the table cannot move between the check and the write.
      await remote(session, `LOCK TABLE ${ref.sql} IN SHARE ROW EXCLUSIVE MODE`);
      before = await contentSnapshot(session, ref);
      if (request.expectedSnapshot && !sameSnapshot(before, request.expectedSnapshot)) throw snapshotConflict(`Table ${ref.schema}.${ref.table}`, before, request.expectedSnapshot);
    }
    const changes: ChangeRow[] | undefined = request.dryRun ? [] : undefined;
    const affected = await applyWrite(session, ref, shape, request, changes);
    if (changes) throw new DryRunRollback({ affected, snapshot: before, changes: changeSetOf(changes) });
    return { affected, ...(checked ? { snapshot: await contentSnapshot(session, ref) } : {}) };
  }));
}

/** Staged rows read per batch when a run commits; applyWrite splits each into INSERTs that fit the parameter bound. */
const STAGED_BATCH = MAX_ROWS_PER_INSERT;

/**
 * A run's staged records in one remote transaction: all visible at its COMMIT, or none. replace
 * deletes the current rows in the same transaction, so readers see the old rows until the commit.
 */
async function commitStagedWrite(ctx: CapabilityContext, target: Record<string, unknown>, request: StagedWriteRequest): Promise<WriteResult> {
  const ref = parseTarget(target);
  return inRemoteTransaction(ctx, async (session) => {
    const shape = await describeTable(session, ref);
    const keyed = shape.primaryKey.length > 0;
    if (request.mode === 'upsert' && !keyed) throw new InputError('primary_key_required', `upsert into ${ref.schema}.${ref.table} needs a primary key on the table.`);
    if (request.mode === 'replace') await remote(session, `DELETE FROM ${ref.sql}`);
    let affected = 0;
    for await (const batch of request.rows.batches(STAGED_BATCH, { latestPerKey: keyed && request.mode !== 'append' })) {
      const operation = request.mode === 'upsert' ? 'upsert' : 'append';
      affected += await applyWrite(session, ref, shape, { operation, rows: batch.map((row) => row.data), provenance: request.provenance });
    }
    return { affected };
  });
}

/** Column names and types as the catalog reports them, and the primary key from pg_index. */
async function discoverSchema(ctx: CapabilityContext, target: Record<string, unknown>): Promise<DiscoveredSchema> {
  const ref = parseTarget(target);
  const shape = await describeTable(await connect(ctx), ref);
  return {
    fields: [...shape.columns.values()].map(({ name, type, nullable }): FieldDescription => ({ name, type, nullable })),
    primaryKey: shape.primaryKey,
  };
}

/** A connection check answers ok:false for an unreachable server, a refused address or login, or a missing privilege, rather than failing. */
async function checkConnection(ctx: CapabilityContext, target: Record<string, unknown>): Promise<CheckResult> {
  const ref = parseTarget(target);
  try {
    const pool = await connect(ctx);
    await remote(pool, 'SELECT 1');
    const { rows } = await remote<{ found: string | null }>(pool, "SELECT to_regclass(quote_ident($1) || '.' || quote_ident($2)) AS found", [ref.schema, ref.table]);
    if (rows[0].found === null) return { ok: false, message: `Connected, but there is no table ${ref.schema}.${ref.table}.`, details: { connected: true, tableExists: false } };
    return { ok: true, message: `Connected; table ${ref.schema}.${ref.table} exists.`, details: { connected: true, tableExists: true } };
  } catch (error) {
    if (error instanceof InputError) throw error;
    if (error instanceof DomainError) return { ok: false, message: `Could not connect: ${error.message}`, details: { connected: false, code: error.code } };
    const message = scrub(error instanceof Error ? error.message : String(error), remoteInfo(settingsOf(ctx.installation)));
    return { ok: false, message: `Could not connect: ${message}`, details: { connected: false, code: 'upstream_error' } };
  }
}

/** The database the installation connects to (host, port, database) and the table in it; the role is not part of the data. */
function dataIdentity(target: Record<string, unknown>, settings: Record<string, unknown>): string {
  // The target was validated against its installation's contract: read, not parsed again.
  const schema = typeof target.schema === 'string' ? target.schema : 'public';
  const table = String(target.table);
  const host = String(settings.host ?? '').replace(/^\[(.*)\]$/, '$1').toLowerCase();
  const port = typeof settings.port === 'number' ? settings.port : 5432;
  const part = encodeURIComponent;
  return `postgres_table://${part(host)}:${port}/${part(String(settings.database ?? ''))}/${part(schema)}.${part(table)}`;
}

export const postgresTableCapability: CapabilityRuntime = {
  definition,
  dataIdentity,
  checkConnection,
  discoverSchema,
  readRecords,
  writeRecords,
  async currentSnapshot(ctx, target) {
    return contentSnapshot(await connect(ctx), parseTarget(target));
  },
  async recordKey(ctx, target) {
    const { primaryKey } = await describeTable(await connect(ctx), parseTarget(target));
    return primaryKey.length ? primaryKey : null;
  },
  commitStagedWrite,
};
