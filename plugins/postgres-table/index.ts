import type pg from 'pg';
import { ConflictError, FieldProblem, InputError, NotFoundError } from '../../core/errors';
import { TABLE_ROLES } from '../capability';
import type { CapabilityContext, CapabilityDefinition, CapabilityRuntime, FieldDescription, RecordsPage, RecordsQuery, WriteRequest, WriteResult } from '../capability';
import { comparisonOperators, compileWhere, ConditionDialect, quoteIdentifier, SqlParams } from '../sql/builder';
import { cursorSelect, decodeCursor, KeysetColumn, keysetAfter, orderByClause, orderOf, TableCursor } from '../sql/keyset';
import { checkWriteRequest, primaryKeyValues } from '../sql/write-request';
import { poolFor } from './pool';

export { closePostgresTablePools } from './pool';

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
    },
  },
  accepts: ['json'],
  emits: ['json'],
  supports: { recordsRead: true, snapshotReads: false, transactionalWrites: true, schemaDiscovery: true, connectionCheck: true },
};

interface TableRef {
  schema: string;
  table: string;
  /** Quoted, schema-qualified name for SQL text. */
  sql: string;
}

function parseTarget(target: Record<string, unknown>): TableRef {
  const pattern = new RegExp(identifier.pattern);
  const schema = target.schema ?? 'public';
  const table = target.table;
  if (typeof schema !== 'string' || !pattern.test(schema) || typeof table !== 'string' || !pattern.test(table)) {
    throw new InputError('invalid_target', `target.schema and target.table must match ${identifier.pattern}.`);
  }
  return { schema, table, sql: `${quoteIdentifier(schema)}.${quoteIdentifier(table)}` };
}

interface Column {
  name: string;
  type: string;
  nullable: boolean;
}

interface TableShape {
  columns: Map<string, Column>;
  primaryKey: string[];
}

/** Runs a statement, turning the remote database's complaints about the request into input or conflict errors. */
async function remote<T extends pg.QueryResultRow>(client: pg.Pool | pg.PoolClient, sql: string, params?: SqlParams): Promise<pg.QueryResult<T>> {
  try {
    return await client.query<T>(sql, params?.values);
  } catch (error) {
    const { code, message } = error as { code?: string; message: string };
    if (code?.startsWith('22')) throw new InputError('invalid_value', `PostgreSQL rejected a value: ${message}`);
    if (code === '42883') throw new InputError('unsupported_comparison', `PostgreSQL cannot compare or order these values: ${message}`);
    if (code?.startsWith('23')) throw new ConflictError('constraint_violation', `The write breaks a table constraint: ${message}`);
    throw error;
  }
}

/** Columns from information_schema (only those the role may see) and the primary key from pg_index, in key order. */
async function describeTable(client: pg.Pool | pg.PoolClient, ref: TableRef): Promise<TableShape> {
  const columns = await client.query<{ name: string; type: string; udt: string; nullable: boolean }>(
    `SELECT column_name AS name, data_type AS type, udt_name AS udt, is_nullable = 'YES' AS nullable
       FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`,
    [ref.schema, ref.table],
  );
  if (!columns.rowCount) throw new NotFoundError('table', `No table or view ${ref.schema}.${ref.table} visible to the installation's role.`);
  const key = await client.query<{ name: string }>(
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
function checkFields(shape: TableShape, uses: Array<{ path: string; field: string }>): void {
  const problems: FieldProblem[] = uses.filter((use) => !shape.columns.has(use.field)).map((use) => ({ path: use.path, message: `"${use.field}" is not a column of the table` }));
  if (problems.length) throw new InputError('unknown_field', `Unknown field: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}`, problems);
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
  const pool = poolFor(ctx.installation);
  const shape = await describeTable(pool, ref);
  checkFields(shape, [
    ...(query.select ?? []).map((field, i) => ({ path: `/select/${i}`, field })),
    ...query.where.map((c, i) => ({ path: `/where/${i}/field`, field: c.field })),
    ...query.orderBy.map((t, i) => ({ path: `/orderBy/${i}/field`, field: t.field })),
  ]);
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

/** INSERT of rows sharing one column set (mixing sets would overwrite omitted columns with defaults on upsert). */
function insertStatement(ref: TableRef, shape: TableShape, columns: string[], rows: Array<Record<string, unknown>>, upsert: boolean): { sql: string; params: SqlParams } {
  const params = new SqlParams();
  const tuples = rows.map((row) => `(${columns.map((name) => params.add(toParam(shape.columns.get(name), row[name]))).join(', ')})`);
  let sql = `INSERT INTO ${ref.sql} (${columns.map(quoteIdentifier).join(', ')}) VALUES ${tuples.join(', ')}`;
  if (upsert) {
    const updates = columns.filter((name) => !shape.primaryKey.includes(name)).map((name) => `${quoteIdentifier(name)} = EXCLUDED.${quoteIdentifier(name)}`);
    sql += ` ON CONFLICT (${shape.primaryKey.map(quoteIdentifier).join(', ')}) ${updates.length ? `DO UPDATE SET ${updates.join(', ')}` : 'DO NOTHING'}`;
  }
  return { sql, params };
}

async function applyWrite(client: pg.PoolClient, ref: TableRef, shape: TableShape, request: WriteRequest): Promise<number> {
  const conditions = columnConditions(shape);
  switch (request.operation) {
    case 'append':
    case 'upsert': {
      const rows = request.rows ?? [];
      checkFields(shape, rows.flatMap((row, i) => Object.keys(row).map((field) => ({ path: `/rows/${i}/${field}`, field }))));
      if (request.operation === 'upsert') primaryKeyValues(rows, shape.primaryKey);
      const groups = new Map<string, Array<Record<string, unknown>>>();
      for (const row of rows) {
        const columns = JSON.stringify(Object.keys(row).sort());
        groups.set(columns, [...(groups.get(columns) ?? []), row]);
      }
      let affected = 0;
      for (const [columns, group] of groups) {
        const { sql, params } = insertStatement(ref, shape, JSON.parse(columns) as string[], group, request.operation === 'upsert');
        affected += (await remote(client, sql, params)).rowCount ?? 0;
      }
      return affected;
    }
    case 'update': {
      const set = request.set ?? {};
      checkFields(shape, [...Object.keys(set).map((field) => ({ path: `/set/${field}`, field })), ...(request.where ?? []).map((c, i) => ({ path: `/where/${i}/field`, field: c.field }))]);
      const params = new SqlParams();
      const assignments = Object.entries(set).map(([name, value]) => `${quoteIdentifier(name)} = ${params.add(toParam(shape.columns.get(name), value))}`);
      const where = compileWhere(request.where ?? [], conditions, params);
      return (await remote(client, `UPDATE ${ref.sql} SET ${assignments.join(', ')} WHERE ${where}`, params)).rowCount ?? 0;
    }
    case 'delete': {
      checkFields(shape, (request.where ?? []).map((c, i) => ({ path: `/where/${i}/field`, field: c.field })));
      const params = new SqlParams();
      const where = compileWhere(request.where ?? [], conditions, params);
      return (await remote(client, `DELETE FROM ${ref.sql} WHERE ${where}`, params)).rowCount ?? 0;
    }
  }
}

async function writeRecords(ctx: CapabilityContext, target: Record<string, unknown>, request: WriteRequest): Promise<WriteResult> {
  const ref = parseTarget(target);
  const client = await poolFor(ctx.installation).connect();
  try {
    await client.query('BEGIN');
    const shape = await describeTable(client, ref);
    checkWriteRequest(request, shape.primaryKey.length ? shape.primaryKey : null);
    const affected = await applyWrite(client, ref, shape, request);
    await client.query('COMMIT');
    return { affected };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

export const postgresTableCapability: CapabilityRuntime = {
  definition,
  async checkConnection(ctx, target) {
    const ref = parseTarget(target);
    try {
      const pool = poolFor(ctx.installation);
      await pool.query('SELECT 1');
      const { rows } = await pool.query<{ found: string | null }>('SELECT to_regclass(quote_ident($1) || \'.\' || quote_ident($2)) AS found', [ref.schema, ref.table]);
      if (rows[0].found === null) return { ok: false, message: `Connected, but there is no table ${ref.schema}.${ref.table}.`, details: { connected: true, tableExists: false } };
      return { ok: true, message: `Connected; table ${ref.schema}.${ref.table} exists.`, details: { connected: true, tableExists: true } };
    } catch (error) {
      if (error instanceof InputError) throw error;
      return { ok: false, message: `Could not connect: ${(error as Error).message}`, details: { connected: false } };
    }
  },
  async discoverSchema(ctx, target) {
    const shape = await describeTable(poolFor(ctx.installation), parseTarget(target));
    return [...shape.columns.values()].map(({ name, type, nullable }): FieldDescription => ({ name, type, nullable }));
  },
  readRecords,
  writeRecords,
};
