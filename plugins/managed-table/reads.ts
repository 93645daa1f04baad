import type { Knex } from 'knex';
import { InputError } from '../../core/errors';
import { postgresJsonBytes } from '../../core/json-text';
import type { CapabilityContext, RecordProvenance, RecordsPage, RecordsQuery, SnapshotInfo } from '../capability';
import { compileWhere, quoteIdentifier, SqlParams } from '../sql/builder';
import { queryFieldUses, refuseUnknownFields } from '../sql/fields';
import { cursorSelect, decodeCursor, KeysetColumn, keysetAfter, orderByClause, orderOf, TableCursor } from '../sql/keyset';
import { fieldSql, readConditions } from './conditions';
import type { ManagedTableMemory } from './memory';
import { isoTimestamp, resolveSnapshot, unknownSnapshot, uuidPattern } from './snapshots';
import { fieldRegistry, qualified, run, SnapshotRow, toSnapshotInfo, workspaceSchema } from './storage';
import { knownFields, parseTarget } from './targets';

// Records reads, three ways: the long way (registry, snapshot and page, a statement each) and, for a
// table this runtime has seen stored, one statement, built once for plain reads.

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

export async function readRecords(ctx: CapabilityContext, rawTarget: Record<string, unknown>, query: RecordsQuery): Promise<RecordsPage> {
  const { table, primaryKey } = parseTarget(ctx, rawTarget);
  const { storedTables, catalogs } = ctx.managedTables;
  const schema = workspaceSchema(ctx.installation.workspaceId);
  const cursor = query.after === undefined || query.after === null ? undefined : decodeCursor(query.after, query.orderBy);
  if (cursor && !isManagedCursor(cursor)) throw new InputError('invalid_continuation', 'The continuation is not a managed table continuation. Start again without it.');
  const stored = `${schema}.${table}`;
  if (storedTables.has(stored) && catalogs.has(schema)) {
    try {
      return await readInOneStatement(ctx.managedTables, ctx.db, schema, table, primaryKey, query, cursor);
    } catch (error) {
      if ((error as { code?: string }).code !== '42P01') throw error;
      storedTables.delete(stored);
    }
  }
  // A table is registered in the same transaction that creates its storage: no registry, never written.
  const registry = await fieldRegistry(catalogs, ctx.db, schema, table);
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
async function readInOneStatement(memory: ManagedTableMemory, db: Knex, schema: string, table: string, primaryKey: string[] | null, query: RecordsQuery, cursor: TableCursor | undefined): Promise<RecordsPage> {
  const plain = !cursor && query.snapshotId === undefined && query.asOf === undefined && query.where.length === 0 && query.orderBy.length === 0;
  const { sql, params, page } = plain ? plainLatestRead(memory, schema, table, query) : oneStatementRead(schema, table, query, cursor);
  return pageOfOneStatement(await run<OneStatementRow>(db, sql, params, { prepared: memory.statements }), table, primaryKey, query, cursor, page);
}

type OneStatementRow = { registry: { fields: string[]; key: string[] | null } | null; snapshot: { id: string; version: number; committed: string } | null } & PageAggregate;

/** The one-statement read: its text and parameters, and the page from its row (a refusal found while building it is thrown there, in the long way's order). */
export interface OneStatementRead {
  sql: string;
  params: SqlParams;
  page: { refusal?: InputError; misfit?: unknown };
}

/** Plain reads are built once per table and limit (ManagedTableMemory.plainReads), at most this many kept. */
const MAX_PLAIN_READS = 200;

function plainLatestRead({ plainReads }: ManagedTableMemory, schema: string, table: string, query: RecordsQuery): OneStatementRead {
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
