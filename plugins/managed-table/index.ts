import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { ConflictError, InputError } from '../../core/errors';
import { validateWithSchema } from '../../core/schema-validator';
import { CHANGE_SET_LIST_LIMIT, EMPTY_SNAPSHOT, sameSnapshot, TABLE_ROLES } from '../capability';
import type { ChangeSet, CapabilityContext, CapabilityDefinition, CapabilityRuntime, DiscoveredSchema, FieldDescription, RecordProvenance, RecordsPage, RecordsQuery, SnapshotInfo, StagedWriteRequest, WriteRequest, WriteResult } from '../capability';
import { comparisonOperators, compileWhere, ConditionDialect, quoteIdentifier, SqlParams } from '../sql/builder';
import { queryFieldUses, refuseUnknownFields } from '../sql/fields';
import { cursorSelect, decodeCursor, KeysetColumn, keysetAfter, orderByClause, orderOf, TableCursor } from '../sql/keyset';
import { changeSetOf, checkWriteRequest, DryRunRollback, primaryKeyValues, snapshotConflict, unlessDryRun } from '../sql/write-request';
import { afterCommit } from '../../db/after-commit';
import { postgresJsonBytes } from '../../core/json-text';
import { announceSnapshotsOf, snapshotCommitted, snapshotScope, SNAPSHOT_NOTICE_CHANNEL } from '../snapshot-notices';
import { FieldRegistry, fieldRegistry, findSnapshot, inTableWrite, isCatalogCurrent, latestSnapshot, latestSnapshots, qualified, registerFields, run, SnapshotRow, tableExists, workspaceSchema } from './storage';

const definition: CapabilityDefinition = {
  name: 'managed_table',
  version: '1.0.0',
  title: 'Managed table',
  description: 'A table kept in Weft’s own PostgreSQL, one schema per workspace. Every committed write creates a snapshot, and history is kept for snapshot and point-in-time reads.',
  roles: TABLE_ROLES,
  targetSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['table'],
    properties: {
      table: { type: 'string', pattern: '^[a-z][a-z0-9_]{0,62}$', description: 'Table name within the workspace: lower-case letter first, then lower-case letters, digits or underscores (at most 63).' },
      primaryKey: {
        type: 'array',
        minItems: 1,
        uniqueItems: true,
        items: { type: 'string', minLength: 1, maxLength: 200 },
        description: 'Record fields identifying a record; needed for upsert. Fixed by the first write.',
      },
    },
  },
  installationSchema: { type: 'object', additionalProperties: false, properties: {}, description: 'Nothing to configure: managed tables live in Weft’s own database.' },
  accepts: ['json'],
  emits: ['json'],
  supports: { recordsRead: true, orderedReads: true, fieldCatalog: true, snapshotReads: true, provenanceReads: true, transactionalWrites: true, schemaDiscovery: true, connectionCheck: true },
};

interface ManagedTarget {
  table: string;
  primaryKey: string[] | null;
}

/** Targets already checked, by their JSON text (a few bytes): every read checks its endpoint's target. */
const checkedTargets = new Map<string, ManagedTarget>();

/** Stored targets were validated on save; checking again guards older rows. Works on a copy. */
function parseTarget(target: Record<string, unknown>): ManagedTarget {
  const text = JSON.stringify(target);
  let checked = checkedTargets.get(text);
  if (!checked) {
    const { table, primaryKey } = validateWithSchema<{ table: string; primaryKey?: string[] }>(definition.targetSchema, JSON.parse(text), 'managed_table target', { code: 'invalid_target' });
    if (checkedTargets.size >= 1000) checkedTargets.clear();
    checkedTargets.set(text, (checked = { table, primaryKey: primaryKey ?? null }));
  }
  // A copy: callers may keep or change theirs.
  return { table: checked.table, primaryKey: checked.primaryKey && [...checked.primaryKey] };
}

/**
 * Every field name a read of the table may use, exactly: the registry of names ever written (so
 * snapshot reads of older versions find fields later records dropped) and the primary key. A table
 * never written has no fields but the key its target declares.
 */
function knownFields(registry: FieldRegistry | undefined, declaredKey: string[] | null): string[] {
  if (!registry) return declaredKey ?? [];
  return [...new Set([...(registry.primaryKey ?? []), ...registry.fields])];
}

/** A record field as jsonb; a missing field reads as JSON null, so comparisons and ordering never meet SQL NULL. */
const fieldSql = (field: string, params: SqlParams) => `coalesce(data -> ${params.add(field)}::text, 'null'::jsonb)`;
const jsonParam = (value: unknown, params: SqlParams) => `${params.add(JSON.stringify(value))}::jsonb`;

const jsonbConditions: ConditionDialect = {
  compare(field, op, value, params) {
    const expr = fieldSql(field, params);
    const literal = jsonParam(value, params);
    if (op === 'eq' || op === 'ne') return `${expr} ${comparisonOperators[op]} ${literal}`;
    // jsonb orders across types (strings below numbers): range comparisons only match values of the same JSON type.
    return `jsonb_typeof(${expr}) = jsonb_typeof(${literal}) AND ${expr} ${comparisonOperators[op]} ${literal}`;
  },
  isIn: (field, values, params) => `${fieldSql(field, params)} IN (SELECT jsonb_array_elements(${jsonParam(values, params)}))`,
  // Present with a non-null value, the same meaning as IS NOT NULL on a postgres_table column.
  exists: (field, params) => `${fieldSql(field, params)} <> 'null'::jsonb`,
};

/**
 * `data ->> field` renders a field as text without building a jsonb value per record: a string as
 * itself, a number as numeric text (a digit or "-" first), true/false, an object or array as JSON
 * text ("{" or "[" first), JSON null and a missing field as SQL NULL. So for a string that cannot be
 * the rendering of anything else, `data ->> field = string` holds exactly when the field is that
 * string: the same records as the jsonb comparison.
 */
const unambiguousText = (value: unknown): value is string => typeof value === 'string' && !/^[-0-9{[]/.test(value) && value !== 'true' && value !== 'false';

/**
 * Reads compile conditions as writes do, but compare strings as text where that means the same
 * (see unambiguousText), and put a text comparison in front of the exact jsonb one where it may not:
 * a full scan of a large table evaluates its conditions on every record version, and building a jsonb
 * value per record and per condition is most of their cost.
 */
const readConditions: ConditionDialect = {
  ...jsonbConditions,
  compare(field, op, value, params) {
    if (op !== 'eq' || typeof value !== 'string') return jsonbConditions.compare(field, op, value, params);
    const text = `(data ->> ${params.add(field)}::text) = ${params.add(value)}::text`;
    return unambiguousText(value) ? text : `${text} AND ${jsonbConditions.compare(field, op, value, params)}`;
  },
  isIn(field, values, params) {
    if (!values.every((value) => typeof value === 'string')) return jsonbConditions.isIn(field, values, params);
    const text = `(data ->> ${params.add(field)}::text) = ANY (ARRAY(SELECT jsonb_array_elements_text(${jsonParam(values, params)})))`;
    return values.every(unambiguousText) ? text : `${text} AND ${jsonbConditions.isIn(field, values, params)}`;
  },
};

function toSnapshotInfo(row: SnapshotRow): SnapshotInfo {
  return { id: row.id, version: String(row.version), committedAt: row.committed.toISOString() };
}

const unknownSnapshot = (message: string) => new InputError('unknown_snapshot', message);
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A managed continuation pins a snapshot version and holds jsonb text per orderBy term, then the row key. */
function isManagedCursor(cursor: TableCursor): boolean {
  if (!/^\d{1,18}$/.test(cursor.version ?? '') || !cursor.key) return false;
  return cursor.key.slice(0, -1).every((text) => {
    try {
      return text !== null && (JSON.parse(text), true);
    } catch {
      return false;
    }
  });
}

const isoTimestamp = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** The snapshot a read sees: the continuation's (pinned), the requested id, the last at or before asOf, or the latest. */
async function resolveSnapshot(db: Knex, schema: string, table: string, query: RecordsQuery, cursor?: TableCursor): Promise<SnapshotRow | undefined> {
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
 * Tables this process has seen stored (registered, so their storage exists): a read of one is a
 * single statement (readInOneStatement). Should one be gone since, the statement fails on the
 * missing table and the read takes the long way, which finds out.
 */
const storedTables = new Set<string>();

/** Test hook: forget which tables were seen stored, so the next read of each takes the long way. */
export function forgetStoredTables(): void {
  storedTables.clear();
}

async function readRecords(ctx: CapabilityContext, rawTarget: Record<string, unknown>, query: RecordsQuery): Promise<RecordsPage> {
  const { table, primaryKey } = parseTarget(rawTarget);
  const schema = workspaceSchema(ctx.installation.workspaceId);
  const cursor = query.after === undefined || query.after === null ? undefined : decodeCursor(query.after, query.orderBy);
  if (cursor && !isManagedCursor(cursor)) throw new InputError('invalid_continuation', 'The continuation is not a managed table continuation. Start again without it.');
  const stored = `${schema}.${table}`;
  if (storedTables.has(stored) && isCatalogCurrent(schema)) {
    try {
      return await readInOneStatement(ctx.db, schema, table, primaryKey, query, cursor);
    } catch (error) {
      if ((error as { code?: string }).code !== '42P01') throw error;
      storedTables.delete(stored);
    }
  }
  // A table is registered in the same transaction that creates its storage: no registry, never written.
  const registry = await fieldRegistry(ctx.db, schema, table);
  if (!registry && (cursor || query.snapshotId !== undefined || query.asOf !== undefined)) throw unknownSnapshot(`Table "${table}" has never been written, so it has no snapshots.`);
  refuseUnknownFields(queryFieldUses(query), knownFields(registry, primaryKey), 'field');
  if (!registry) return { records: [], continuation: null };
  if (!ctx.db.isTransaction) storedTables.add(stored);
  const snapshot = await resolveSnapshot(ctx.db, schema, table, query, cursor);
  if (!snapshot) return { records: [], continuation: null };
  const params = new SqlParams();
  const version = params.add(snapshot.version);
  const { sql, pageOfRows } = pageQuery(schema, table, query, cursor, version, params);
  const { rows } = await run<PageRow>(ctx.db, sql, params);
  return pageOfRows(rows, snapshot);
}

interface PageRow {
  data: Record<string, unknown>;
  provenance: RecordProvenance | null;
  position: Array<string | null>;
}

/** What wrote a record version, as the read answers it (committedAt in UTC, as JavaScript writes dates). */
const PROVENANCE_SQL = `json_build_object('kind', produced_by_kind, 'id', produced_by_id, 'committedAt', to_char(produced_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`;

/**
 * One page of a table at a snapshot version (an SQL expression): the statement, and the page from its rows.
 * `version: 'current'`: the table as the statement sees it, for a statement that reads the latest
 * snapshot itself: the record versions not yet ended (the partial unique index on row_key holds
 * them, in row_key order).
 */
function pageQuery(schema: string, table: string, query: RecordsQuery, cursor: TableCursor | undefined, version: string, params: SqlParams) {
  const where = compileWhere(query.where, readConditions, params);
  const keyset: KeysetColumn[] = [
    ...query.orderBy.map((term): KeysetColumn => ({ sql: fieldSql(term.field, params), direction: term.direction, cast: '::jsonb', nullable: false })),
    // row_key is unique within a snapshot: the tie-breaker that makes every position distinct.
    { sql: 'row_key', direction: 'asc', nullable: false },
  ];
  const after = cursor?.key ? keysetAfter(keyset, cursor.key, params) : 'TRUE';
  const limit = params.add(query.limit + 1);
  // The page is chosen inside; its positions are written as text outside, for the page's rows
  // only (not for every row the sort meets, as a position in the sorted select list would be).
  const picked: KeysetColumn[] = keyset.map((column, i) => ({ ...column, sql: `k${i}` }));
  const provenance = query.provenance ? PROVENANCE_SQL : 'NULL::json';
  const inner = `SELECT data, ${provenance} AS provenance, ${keyset.map((column, i) => `${column.sql} AS k${i}`).join(', ')} FROM ${qualified(schema, table)}
        WHERE ${version === 'current' ? 'valid_to IS NULL' : `valid_from <= ${version} AND (valid_to IS NULL OR valid_to > ${version})`} AND (${where}) AND (${after})
        ORDER BY ${orderByClause(picked)} LIMIT ${limit}`;
  const pageOf = (data: PageRecords, position: Array<string | null> | null, snapshot: SnapshotRow, provenance?: RecordProvenance[]): RecordsPage => pageFrom(query, data, position, snapshot, provenance);
  return {
    sql: `SELECT data, provenance, ${cursorSelect(picked)} AS position FROM (${inner}) page ORDER BY ${orderByClause(picked)}`,
    /** The rows of `sql` as the page: the one past the page says more follow, and is not part of it. */
    pageOfRows: (rows: PageRow[], snapshot: SnapshotRow): RecordsPage => {
      const pageRows = rows.slice(0, query.limit);
      const provenance = query.provenance ? pageRows.map((row) => row.provenance!) : undefined;
      return pageOf(pageRows.map((row) => row.data), rows.length > query.limit ? rows[query.limit - 1].position : null, snapshot, provenance);
    },
    /**
     * The same page in one row (PageAggregate), for a statement that selects more than the page:
     * the records alone as one JSON text, how many rows were read (the one past the page is
     * counted, not sent), and the last record's position only when a row follows it.
     */
    // The records are aggregated in the order the numbered rows come in, sorted by the subquery (as
    // PostgreSQL documents for ordered aggregate input): already in the window's order, so no sort is
    // added, where json_agg(data ORDER BY n) sorted the page again (about 15% of the statement).
    aggregate: (pageSize = params.add(query.limit)) => `SELECT coalesce(json_agg(data) FILTER (WHERE n <= ${pageSize}), '[]'::json)::text AS records,
             count(*) AS read,
             ${query.provenance ? `coalesce(json_agg(provenance) FILTER (WHERE n <= ${pageSize}), '[]'::json)` : 'NULL::json'} AS provenance,
             CASE WHEN count(*) > ${pageSize} THEN (json_agg(${cursorSelect(picked)}) FILTER (WHERE n = ${pageSize})) -> 0 END AS position
           FROM (SELECT page.*, row_number() OVER (ORDER BY ${orderByClause(picked)}) AS n FROM (${inner}) page ORDER BY ${orderByClause(picked)}) numbered`,
    pageOf,
  };
}

/** The page's records (objects, or their JSON text as PostgreSQL wrote it), and the position of its last one when more follow (the continuation). */
function pageFrom(query: RecordsQuery, data: PageRecords, position: Array<string | null> | null, snapshot: SnapshotRow, provenance?: RecordProvenance[]): RecordsPage {
  const continuation: TableCursor | null = position ? { order: orderOf(query.orderBy), key: position, version: String(snapshot.version) } : null;
  const select = query.select;
  const info = toSnapshotInfo(snapshot);
  let page: RecordsPage;
  if (!Array.isArray(data) && !select) page = pageOfJsonText(data.text, data.count, continuation, info);
  else {
    const rows: Array<Record<string, unknown>> = Array.isArray(data) ? data : JSON.parse(data.text);
    page = { records: select ? rows.map((row) => Object.fromEntries(select.map((field) => [field, row[field] ?? null]))) : rows, continuation, snapshot: info };
  }
  // Set, not spread: a page of JSON text parses its records only when they are read.
  if (provenance) page.provenance = provenance;
  return page;
}

/** A page's records: objects, or their JSON text with how many there are. */
type PageRecords = Array<Record<string, unknown>> | { text: string; count: number };

/** A page as the one-statement read returns it (pageQuery's aggregate). */
interface PageAggregate {
  records: string;
  read: number;
  /** What wrote each record of the page, when the read asked. */
  provenance: RecordProvenance[] | null;
  position: Array<string | null> | null;
}

/**
 * A page whose records stay the JSON text PostgreSQL wrote (as JavaScript writes it: see
 * postgresJsonBytes), parsed only should someone read them as objects.
 */
function pageOfJsonText(text: string, count: number, continuation: TableCursor | null, snapshot: SnapshotInfo): RecordsPage {
  const bytes = postgresJsonBytes(text);
  let records: Array<Record<string, unknown>> | undefined;
  return {
    get records() {
      return (records ??= JSON.parse(bytes.toString('utf8')) as Array<Record<string, unknown>>);
    },
    recordsJson: { bytes, count },
    continuation,
    snapshot,
  };
}

/** The snapshot filter of a read of the latest snapshot. */
const LATEST = 'TRUE ORDER BY version DESC LIMIT 1';

/**
 * A read of a table known to be stored, in one round trip: its field registry, the snapshot the read
 * sees and the page, in one statement; the checks of readRecords then run on what it returned, with
 * the same answers in the same order.
 */
async function readInOneStatement(db: Knex, schema: string, table: string, primaryKey: string[] | null, query: RecordsQuery, cursor: TableCursor | undefined): Promise<RecordsPage> {
  const plain = !cursor && query.snapshotId === undefined && query.asOf === undefined && query.where.length === 0 && query.orderBy.length === 0;
  const { sql, params, page } = plain ? plainLatestRead(schema, table, query) : oneStatementRead(schema, table, query, cursor);
  return pageOfOneStatement(await run<OneStatementRow>(db, sql, params, { prepared: true }), table, primaryKey, query, cursor, page);
}

type OneStatementRow = { registry: { fields: string[]; key: string[] | null } | null; snapshot: { id: string; version: number; committed: string } | null } & PageAggregate;

/** The one-statement read: its text and parameters, and the page from its row (a refusal found while building it is thrown there, in the long way's order). */
interface OneStatementRead {
  sql: string;
  params: SqlParams;
  page: { refusal?: InputError; misfit?: unknown };
}

/**
 * The statements of plain reads (the latest snapshot, no filter, order or cursor: a page of a table
 * as it is now), per table and limit: their text and parameters depend on nothing else, so they
 * are built once, not on every read (select only shapes the page from the same rows).
 */
const plainReads = new Map<string, OneStatementRead>();
const MAX_PLAIN_READS = 200;

function plainLatestRead(schema: string, table: string, query: RecordsQuery): OneStatementRead {
  const key = `${schema}.${table}:${query.limit}:${query.provenance ? 'provenance' : ''}`;
  let read = plainReads.get(key);
  if (read === undefined) {
    read = oneStatementRead(schema, table, { where: [], orderBy: [], limit: query.limit, provenance: query.provenance }, undefined);
    if (plainReads.size >= MAX_PLAIN_READS) plainReads.clear();
    plainReads.set(key, read);
  }
  return read;
}

function oneStatementRead(schema: string, table: string, query: RecordsQuery, cursor: TableCursor | undefined): OneStatementRead {
  const params = new SqlParams();
  const tableParam = params.add(table);
  let refusal: InputError | undefined;
  let filter: string;
  if (cursor) filter = `version = ${params.add(cursor.version)}::bigint`;
  else if (query.snapshotId !== undefined) filter = uuidPattern.test(query.snapshotId) ? `id = ${params.add(query.snapshotId)}::uuid` : 'FALSE';
  else if (query.asOf !== undefined) {
    const valid = isoTimestamp.test(query.asOf) && !Number.isNaN(Date.parse(query.asOf));
    if (!valid) refusal = new InputError('invalid_as_of', 'asOf must be an ISO 8601 timestamp.');
    filter = valid ? `committed_at <= ${params.add(new Date(query.asOf))}::timestamptz ORDER BY version DESC LIMIT 1` : 'FALSE';
  } else filter = LATEST;
  const s = quoteIdentifier(schema);
  const snapshotSql = `SELECT id, version, committed_at AS committed FROM ${s}._snapshots WHERE table_name = ${tableParam} AND ${filter}`;
  // The latest snapshot and the records not yet ended are read by the same statement, so they agree
  // (a commit writes both in one transaction).
  const version = filter === LATEST ? 'current' : '(SELECT version FROM snap)';
  // A continuation whose position does not fit the order is refused after its snapshot is checked,
  // as the long way does. (Values the refused attempt added to params are bound by nothing in the text.)
  let misfit: unknown;
  let page: ReturnType<typeof pageQuery>;
  try {
    page = pageQuery(schema, table, query, cursor, version, params);
  } catch (error) {
    misfit = error;
    page = pageQuery(schema, table, query, undefined, version, params);
  }
  const sql = `WITH snap AS (${snapshotSql})
     SELECT (SELECT json_build_object('fields', fields, 'key', primary_key) FROM ${s}._tables WHERE table_name = ${tableParam}) AS registry,
            (SELECT to_json(snap) FROM snap) AS snapshot,
            page.records, page.read, page.provenance, page.position
       FROM (${page.aggregate()}) page`;
  return { sql, params, page: { refusal, misfit } };
}

function pageOfOneStatement({ rows }: { rows: OneStatementRow[] }, table: string, primaryKey: string[] | null, query: RecordsQuery, cursor: TableCursor | undefined, { refusal, misfit }: OneStatementRead['page']): RecordsPage {
  const { registry, snapshot, records, read, provenance, position } = rows[0];
  if (!registry && (cursor || query.snapshotId !== undefined || query.asOf !== undefined)) throw unknownSnapshot(`Table "${table}" has never been written, so it has no snapshots.`);
  refuseUnknownFields(queryFieldUses(query), knownFields(registry ? { fields: registry.fields, primaryKey: registry.key } : undefined, primaryKey), 'field');
  if (refusal) throw refusal;
  if (!registry) return { records: [], continuation: null };
  if (!snapshot) {
    if (cursor) throw new InputError('invalid_continuation', 'The continuation names a snapshot this table does not have. Start again without it.');
    if (query.snapshotId !== undefined) throw unknownSnapshot(`Table "${table}" has no snapshot ${query.snapshotId}.`);
    if (query.asOf !== undefined) throw unknownSnapshot(`Table "${table}" has no snapshot committed at or before ${query.asOf}.`);
    return { records: [], continuation: null };
  }
  if (misfit) throw misfit;
  return pageFrom(query, { text: records, count: Math.min(read, query.limit) }, position, { id: snapshot.id, version: Number(snapshot.version), committed: new Date(snapshot.committed) }, provenance ?? undefined);
}

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

/** Field names from the registry (see knownFields), types from a sample; the primary key the table was created with, or the one its target declares. */
async function discoverSchema(ctx: CapabilityContext, rawTarget: Record<string, unknown>): Promise<DiscoveredSchema> {
  const { table, primaryKey: declaredKey } = parseTarget(rawTarget);
  const schema = workspaceSchema(ctx.installation.workspaceId);
  const registry = await fieldRegistry(ctx.db, schema, table);
  const primaryKey = registry ? (registry.primaryKey ?? []) : (declaredKey ?? []);
  const names = knownFields(registry, declaredKey);
  if (!registry || !names.length) return { fields: primaryKey.map((name): FieldDescription => ({ name, type: 'unknown', nullable: false })), primaryKey };
  // Names come from the registry; types are inferred from a bounded sample of current records, so discovery stays cheap on large tables.
  const { rows } = await run<{ name: string; types: string[]; present: number; total: number }>(
    ctx.db,
    `WITH sample AS (SELECT data FROM ${qualified(schema, table)} WHERE valid_to IS NULL LIMIT 1000)
     SELECT field.key AS name, array_agg(DISTINCT jsonb_typeof(field.value)) AS types, count(*) AS present, (SELECT count(*) FROM sample) AS total
     FROM sample, jsonb_each(sample.data) field GROUP BY field.key`,
  );
  const sampled = new Map(rows.map((row) => [row.name, row]));
  const fields = names.map((name): FieldDescription => {
    const key = primaryKey.includes(name);
    const seen = sampled.get(name);
    // A registered field no sampled current record has: its type is unknown, and it may be missing.
    if (!seen) return { name, type: 'unknown', nullable: !key };
    const valueTypes = seen.types.filter((type) => type !== 'null');
    const type = valueTypes.length === 0 ? 'null' : valueTypes.length === 1 ? valueTypes[0] : 'json';
    return { name, type, nullable: !key && (seen.present < seen.total || seen.types.includes('null')) };
  });
  return { fields, primaryKey };
}

/**
 * Commits one new snapshot of a table locked by inTableWrite: `apply` writes the record versions
 * as `version` and returns how many records it affected and which field names it wrote; the
 * snapshot row, the field registry and the latest version follow in the same transaction.
 */
async function commitSnapshot(
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

/** Tells this process a snapshot is committed: now, or once the caller's transaction commits (every process also hears the NOTIFY). */
function announceCommitted(db: Knex, workspaceId: string): void {
  afterCommit(db, () => snapshotCommitted(workspaceId));
}

const duplicateKey = (table: string) => new ConflictError('duplicate_key', `A row with the same primary key is already in table "${table}"; use upsert to replace it.`);

async function writeRecords(ctx: CapabilityContext, rawTarget: Record<string, unknown>, request: WriteRequest): Promise<WriteResult> {
  const { table, primaryKey } = parseTarget(rawTarget);
  checkWriteRequest(request, primaryKey);
  checkProvenance(request);
  const schema = workspaceSchema(ctx.installation.workspaceId);
  const t = qualified(schema, table);
  try {
    // Nested in the caller's transaction when ctx.db is one (as a savepoint): all or nothing either way.
    const written = await unlessDryRun(() => inTableWrite(ctx.db, schema, table, primaryKey, async (trx, state) => {
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
    if (!request.dryRun) announceCommitted(ctx.db, ctx.installation.workspaceId);
    return written;
  } catch (error) {
    if (request.operation === 'append' && (error as { code?: string }).code === '23505') throw duplicateKey(table);
    throw error;
  }
}

/**
 * The change set of version `version`: record versions it ended (before) joined by key to the
 * ones it began (after). A record rewritten with identical data is no change.
 */
async function changesAt(trx: Knex.Transaction, t: string, version: number, keyed: boolean): Promise<ChangeSet> {
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

/**
 * A run's staged records as one snapshot, set-based inside Weft's database (no record passes
 * through this process): append inserts them; upsert and replace keep the last staged record of
 * each key; replace also ends every current record, so readers see the old table until the commit
 * and the new one after, never an empty or half-filled one.
 */
async function commitStagedWrite(ctx: CapabilityContext, rawTarget: Record<string, unknown>, request: StagedWriteRequest): Promise<WriteResult> {
  const { table, primaryKey } = parseTarget(rawTarget);
  if (request.mode === 'upsert' && !primaryKey) throw new InputError('primary_key_required', `upsert into managed table "${table}" needs a primaryKey on its target.`);
  const schema = workspaceSchema(ctx.installation.workspaceId);
  const t = qualified(schema, table);
  try {
    const written = await inTableWrite(ctx.db, schema, table, primaryKey, async (trx, state) => {
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
    announceCommitted(ctx.db, ctx.installation.workspaceId);
    return written;
  } catch (error) {
    if (request.mode === 'append' && (error as { code?: string }).code === '23505') throw duplicateKey(table);
    throw error;
  }
}

// Every commit announces its snapshot (commitSnapshot), so SPARQL datasets keep the current snapshots they read.
announceSnapshotsOf('managed_table');

export const managedTableCapability: CapabilityRuntime = {
  definition,
  // Every managed_table installation of a workspace reaches the same schema: the table is the data.
  dataIdentity: (target) => `managed_table:${String(target.table)}`,
  async checkConnection(ctx, rawTarget) {
    const { table } = parseTarget(rawTarget);
    await ctx.db.raw('SELECT 1');
    const schema = workspaceSchema(ctx.installation.workspaceId);
    const exists = await tableExists(ctx.db, schema, table);
    const latest = exists ? await latestSnapshot(ctx.db, schema, table) : undefined;
    return {
      ok: true,
      message: exists ? `Managed table "${table}" is reachable.` : `Managed table "${table}" will be created by its first write.`,
      details: { tableExists: exists, latestSnapshot: latest ? toSnapshotInfo(latest) : null },
    };
  },
  discoverSchema,
  readRecords,
  writeRecords,
  async currentSnapshot(ctx, rawTarget) {
    const { table } = parseTarget(rawTarget);
    const schema = workspaceSchema(ctx.installation.workspaceId);
    const latest = (await tableExists(ctx.db, schema, table)) ? await latestSnapshot(ctx.db, schema, table) : undefined;
    return latest ? toSnapshotInfo(latest) : EMPTY_SNAPSHOT;
  },
  async currentSnapshots(ctx, rawTargets) {
    const tables = rawTargets.map((rawTarget) => parseTarget(rawTarget).table);
    const latest = await latestSnapshots(ctx.db, workspaceSchema(ctx.installation.workspaceId), [...new Set(tables)]);
    return tables.map((table) => {
      const row = latest.get(table);
      return row ? toSnapshotInfo(row) : EMPTY_SNAPSHOT;
    });
  },
  async recordKey(_ctx, rawTarget) {
    return parseTarget(rawTarget).primaryKey;
  },
  commitStagedWrite,
};
