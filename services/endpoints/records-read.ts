import { createHash, createHmac } from 'node:crypto';
import { decryptSecret, encryptSecret } from '../../core/secrets';
import { InputError, UpstreamError } from '../../core/errors';
import { validateWithSchema } from '../../core/schema-validator';
import { checkJsonShape } from '../../core/json-shape';
import type { Condition, OrderTerm, RecordProvenance, RecordsPage, RecordsQuery, SnapshotInfo, StopReason } from '../../plugins/capability';
import type { DataEndpoint, PluginInstallation } from '../../db/models';
import type { WritesJson } from '../../core/json-text';
import { findCapability } from '../../plugins';
import { orderBySchema, whereSchema } from '../../plugins/condition-schemas';
import { capabilityContext, requireDataEndpoint } from './data-endpoints';
import { guardEndpointData } from './data-guard';
import { callerIdOf } from '../tenancy/access';
import type { OperationContext } from '../operations/context';

export const DEFAULT_RECORDS_LIMIT = 100;
/** The handler cap, independent of list paging (SPEC 8). */
export const MAX_RECORDS_LIMIT = 1000;
/** Keeps cursors well inside URL length limits. */
const MAX_CONTINUATION_BYTES = 4096;

/** Raw query-string parameters of GET /data-endpoints/{id}/records. */
export interface RecordsReadParams {
  limit?: number;
  select?: string | string[];
  where?: string;
  orderBy?: string;
  snapshotId?: string;
  asOf?: string;
  /** Also answer what wrote each record (the query schema coerces "true"). */
  provenance?: boolean;
  cursor?: string;
}

export interface RecordsReadResult {
  data: Array<Record<string, unknown>>;
  /** Index for index with data: the run or governed write that wrote each record (when asked). */
  provenance?: RecordProvenance[];
  metadata: {
    rowCount: number;
    limit: number;
    hasMore: boolean;
    nextCursor: string | null;
    snapshot: SnapshotInfo | null;
    stopReason: StopReason | null;
    pagesFetched: number | null;
  };
}

function parseJsonParam<T>(name: string, text: string | undefined, schema: Record<string, unknown>): T | undefined {
  if (text === undefined || text === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new InputError(`invalid_${name}`, `${name} must be a URL-encoded JSON array.`, [{ path: `query:${name}`, message: 'is not valid JSON' }]);
  }
  checkJsonShape(parsed, `${name} parameter`);
  return validateWithSchema<T>(schema, parsed, `${name} parameter`, { code: `invalid_${name}` });
}

function parseSelect(select: string | string[] | undefined): string[] | undefined {
  if (select === undefined) return undefined;
  const fields = (Array.isArray(select) ? select : [select]).flatMap((part) => part.split(',')).map((f) => f.trim());
  if (fields.some((f) => f === '' || f.length > 200)) {
    throw new InputError('invalid_select', 'select takes field names (1 to 200 characters), repeated or comma-separated.', [{ path: 'query:select', message: 'has an empty or overlong field name' }]);
  }
  return [...new Set(fields)];
}

/** What a cursor carries: bound to the caller (the API key, or the signed-in member), the endpoint and the exact read parameters. */
interface CursorPayload {
  v: 1;
  key: string;
  endpoint: string;
  params: string;
  after: unknown;
}

/** Cursors are encrypted (AES-GCM): clients can neither read remote positions in them nor alter them. */
const cursorKey = (encryptionKey: Buffer) => createHmac('sha256', encryptionKey).update('weft records cursor v1').digest();

function sealCursor(payload: CursorPayload, encryptionKey: Buffer): string {
  return Buffer.from(encryptSecret(JSON.stringify(payload), cursorKey(encryptionKey))).toString('base64url');
}

function openCursor(cursor: string, encryptionKey: Buffer): CursorPayload {
  try {
    const bytes = Buffer.from(cursor, 'base64url');
    // base64url decoding ignores stray characters; a cursor must be exactly what was issued.
    if (bytes.toString('base64url') !== cursor) throw new Error('not canonical');
    return JSON.parse(decryptSecret(bytes.toString('utf8'), cursorKey(encryptionKey))) as CursorPayload;
  } catch {
    throw new InputError('invalid_cursor', 'The cursor is not one this service issued, or it was altered.', [{ path: 'query:cursor', message: 'is invalid' }]);
  }
}

function fieldsUsed(query: RecordsQuery): string[] {
  return [...(query.select ?? []), ...query.where.map((c) => c.field), ...query.orderBy.map((o) => o.field)];
}

/**
 * A bounded records read (SPEC 4.4): parses and checks the parameters, checks field names against
 * the endpoint's schema, asks the capability for one page, and wraps its continuation in a cursor.
 */
export async function readEndpointRecords(ctx: OperationContext, endpointId: string, params: RecordsReadParams): Promise<RecordsReadResult> {
  return readRecordsOf(ctx, await requireDataEndpoint(ctx.deps, ctx.db, ctx.principal.workspaceId, endpointId, { shared: true }), params);
}

async function readRecordsOf(ctx: OperationContext, { endpoint, installation }: { endpoint: DataEndpoint; installation: PluginInstallation }, params: RecordsReadParams): Promise<RecordsReadResult> {
  const { db, deps: { encryptionKey }, principal } = ctx;
  const runtime = findCapability(installation.capability, installation.capabilityVersion);
  if (!runtime.definition.supports.recordsRead) throw new InputError('records_read_not_supported', `${runtime.definition.name} endpoints cannot be read.`);

  const limit = params.limit ?? DEFAULT_RECORDS_LIMIT;
  const where = parseJsonParam<Condition[]>('where', params.where, whereSchema) ?? [];
  const orderBy = (parseJsonParam<OrderTerm[]>('orderBy', params.orderBy, orderBySchema) ?? []).map((o) => ({ field: o.field, direction: o.direction ?? 'asc' }));
  const select = parseSelect(params.select);
  if (orderBy.length && !runtime.definition.supports.orderedReads) {
    throw new InputError('order_not_supported', `${runtime.definition.name} endpoints return records in the remote system's order; orderBy is not available.`, [{ path: 'query:orderBy', message: 'is not supported by this capability' }]);
  }
  if (params.snapshotId && params.asOf) throw new InputError('conflicting_snapshot_selectors', 'Send snapshotId or asOf, not both.');
  if ((params.snapshotId || params.asOf) && !runtime.definition.supports.snapshotReads) {
    throw new InputError('snapshot_not_supported', `${runtime.definition.name} endpoints do not support snapshotId or asOf reads.`);
  }

  const provenance = params.provenance === true;
  if (provenance && !runtime.definition.supports.provenanceReads) {
    throw new InputError('provenance_not_supported', `${runtime.definition.name} endpoints do not record what wrote each record; provenance is available on managed_table endpoints.`, [{ path: 'query:provenance', message: 'is not supported by this capability' }]);
  }
  const query: RecordsQuery = { select, where, orderBy, limit, snapshotId: params.snapshotId, asOf: params.asOf, ...(provenance ? { provenance } : {}) };
  // The endpoint's target is part of the fingerprint: after a PATCH, old positions mean nothing.
  // Only cursors need it: a read that follows none and issues none (a last page) skips the hash.
  const paramsFingerprint = () => createHash('sha256')
    .update(JSON.stringify({ select, where, orderBy, limit, snapshotId: params.snapshotId, asOf: params.asOf, provenance, target: endpoint.target }))
    .digest('base64url');
  if (params.cursor) {
    const cursor = openCursor(params.cursor, encryptionKey);
    if (cursor.key !== callerIdOf(principal) || cursor.endpoint !== endpoint.id) {
      throw new InputError('cursor_not_yours', 'This cursor was issued to another caller or for another endpoint. Follow cursors with the same key.', [{ path: 'query:cursor', message: 'belongs to another caller or endpoint' }]);
    }
    if (cursor.params !== paramsFingerprint()) {
      throw new InputError('cursor_parameters_changed', 'Follow a cursor with the same read parameters (select, where, orderBy, limit, snapshotId, asOf, provenance) that produced it. A cursor also ends when the endpoint’s target changes.', [{ path: 'query:cursor', message: 'was issued for other parameters or an earlier target' }]);
    }
    query.after = cursor.after;
  }

  const capability = capabilityContext(db, installation, ctx.deps);
  // Stores with a field catalog refuse unknown fields themselves; for the rest the endpoint's
  // declared columns are the contract.
  const used = fieldsUsed(query);
  if (used.length && !runtime.definition.supports.fieldCatalog) {
    const known = endpoint.schemaHints?.columns?.map((c) => c.name);
    if (!known?.length) {
      throw new InputError('schema_unknown', `This endpoint has no known fields to check select, where or orderBy against: declare them in schemaHints.columns (PATCH the endpoint; GET …/schema suggests them).`, [{ path: 'query', message: 'needs schemaHints.columns on the endpoint' }]);
    }
    const unknown = [...new Set(used.filter((f) => !known.includes(f)))];
    if (unknown.length) {
      throw new InputError('unknown_field', `Unknown fields for this endpoint: ${unknown.join(', ')}. Known fields: ${known.slice(0, 50).join(', ')}.`, unknown.map((f) => ({ path: 'query', message: `field ${f} is not in the endpoint schema` })));
    }
  }

  const page = await runtime.readRecords(capability, endpoint.target, query);
  // A remote system chooses cursor values and links; one that would not fit in a URL is refused here.
  if (page.continuation !== null && page.continuation !== undefined && JSON.stringify(page.continuation).length > MAX_CONTINUATION_BYTES) {
    throw new UpstreamError('upstream_invalid_response', `The remote system returned a continuation position longer than ${MAX_CONTINUATION_BYTES} bytes.`);
  }
  const nextCursor = page.continuation === null || page.continuation === undefined
    ? null
    : sealCursor({ v: 1, key: callerIdOf(principal), endpoint: endpoint.id, params: paramsFingerprint(), after: page.continuation }, encryptionKey);
  return new RecordsAnswer(page, {
    rowCount: page.recordsJson?.count ?? page.records.length,
    limit,
    hasMore: nextCursor !== null,
    nextCursor,
    snapshot: page.snapshot ?? null,
    stopReason: page.stopReason ?? null,
    pagesFetched: page.pagesFetched ?? null,
  });
}

/**
 * A read's answer. Records a store gave as JSON (RecordsPage.recordsJson) are written into the
 * answer as they are (toJsonBytes, for the HTTP answer), and parsed only should a caller read
 * `data`. toJSON and toJsonBytes write the same JSON.
 */
const DATA_OPENING = Buffer.from('{"data":');

class RecordsAnswer implements RecordsReadResult, WritesJson {
  constructor(private readonly page: RecordsPage, readonly metadata: RecordsReadResult['metadata']) {}

  get data(): Array<Record<string, unknown>> {
    return this.page.records;
  }

  get provenance(): RecordProvenance[] | undefined {
    return this.page.provenance;
  }

  toJSON(): RecordsReadResult {
    return { data: this.data, ...(this.provenance ? { provenance: this.provenance } : {}), metadata: this.metadata };
  }

  toJsonBytes(): Buffer {
    const records = this.page.recordsJson?.bytes ?? Buffer.from(JSON.stringify(this.page.records), 'utf8');
    const provenance = this.provenance ? `,"provenance":${JSON.stringify(this.provenance)}` : '';
    return Buffer.concat([DATA_OPENING, records, Buffer.from(`${provenance},"metadata":${JSON.stringify(this.metadata)}}`, 'utf8')]);
  }
}

/**
 * A caller's records read (the records route and term reads): the read plus its metering. Reads
 * inside other metered work (a SPARQL query's dataset) use readEndpointRecords and are not metered twice.
 */
export async function readRecordsMetered(ctx: OperationContext, endpointId: string, params: RecordsReadParams): Promise<RecordsReadResult> {
  const { db, principal } = ctx;
  const found = await requireDataEndpoint(ctx.deps, db, principal.workspaceId, endpointId, { shared: true });
  // The direct read of GET …/records: reads through bindings (term reads, SPARQL) ask the guard for the binding's data instead.
  await guardEndpointData(ctx.deps, db, principal, found.endpoint, { channel: 'records', mode: 'read' });
  const result = await readRecordsOf(ctx, found, params);
  await ctx.deps.metering.chargeRecordsRead(db, { workspaceId: principal.workspaceId, actor: principal, records: result.metadata.rowCount });
  return result;
}
