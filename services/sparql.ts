import { randomUUID } from 'node:crypto';
import { Parser, Quad, Store } from 'n3';
import { assertCredit, meter } from './usage';
import { BadRequestError, InputError, NotAcceptableError, NotFoundError, PayloadTooLargeError, PermissionError, UnsupportedMediaTypeError } from '../core/errors';
import { logger } from '../core/logger';
import type { Executor } from '../db/connection';
import { DataEndpoint, OntologyPackage, Project, ReadBinding, Workspace } from '../db/models';
import { findCapability } from '../plugins';
import { evaluateQuery, parseSparql } from '../ontology/sparql-engine';
import { negotiate, serializeResult } from '../ontology/sparql-results';
import { mapRecord } from '../ontology/term-records';
import { hasScope, Principal } from './access';
import { capabilityContext } from './data-endpoints';
import { activePackage } from './ontology';
import { bindingFields, readableBindings } from './read-bindings';
import type { SourceWriteDependencies } from './source-writes';
import { applySparqlUpdate } from './sparql-updates';
import { readEndpointRecords } from './records-read';

// The SPARQL 1.1 Protocol endpoint of a project (SPEC 4.5). The dataset is the active package plus
// the records of the bound terms this caller may read: named grants are applied inside the
// dataset, so two keys can get different answers to one query. Bound records are mapped to
// triples with bounded work and reused while their endpoint's snapshot is unchanged.

/** SPEC 8: request text of at most 1 MB. */
export const MAX_SPARQL_BYTES = 1024 * 1024;
export const SPARQL_LIMITS = { timeoutMs: 10_000, maxResults: 10_000 };
/** Most records one query maps from all bindings together; beyond it the dataset is truncated (and says so). */
export const MAX_BOUND_RECORDS = 50_000;
const PAGE = 1000;

export interface SparqlRequest {
  method: 'GET' | 'POST';
  /** GET: the query string; POST: the parsed form or raw body. */
  query?: string;
  update?: string;
  /** Present when the caller sent default-graph-uri or named-graph-uri. */
  graphParameters: boolean;
  accept?: string;
  /** Idempotency-Key header of an update: its governed write actions replay instead of writing again. */
  idempotencyKey?: string;
}

/** Reads the protocol's request forms (SPEC 4.5): GET ?query=, POST raw query or update, or a form. */
export function sparqlRequestFrom(method: 'GET' | 'POST', query: Record<string, unknown>, bodyType: string | undefined, body: string | undefined, accept: string | undefined): SparqlRequest {
  const graphParameters = 'default-graph-uri' in query || 'named-graph-uri' in query;
  const text = (value: unknown) => (Array.isArray(value) ? String(value[0]) : typeof value === 'string' ? value : undefined);
  if (method === 'GET') {
    if ('update' in query) throw new BadRequestError('update_over_get', 'SPARQL updates must be sent with POST (application/sparql-update, or a form with update=).');
    const text_ = text(query.query);
    if (!text_) throw new InputError('query_required', 'Send the query in ?query= (or POST it).', [{ path: 'query:query', message: 'is required' }]);
    return { method, query: text_, graphParameters, accept };
  }
  if (bodyType === 'application/sparql-query') return { method, query: body ?? '', graphParameters, accept };
  if (bodyType === 'application/sparql-update') return { method, update: body ?? '', graphParameters, accept };
  if (bodyType === 'application/x-www-form-urlencoded') {
    const form = new URLSearchParams(body ?? '');
    const formGraphs = form.has('default-graph-uri') || form.has('named-graph-uri') || form.has('using-graph-uri') || form.has('using-named-graph-uri');
    const queryText = form.get('query') ?? undefined;
    const updateText = form.get('update') ?? undefined;
    if (queryText !== undefined && updateText !== undefined) throw new InputError('query_and_update', 'Send query= or update=, not both.');
    if (queryText === undefined && updateText === undefined) throw new InputError('query_required', 'The form needs query= or update=.', [{ path: 'body', message: 'has neither query nor update' }]);
    return { method, query: queryText, update: updateText, graphParameters: graphParameters || formGraphs, accept };
  }
  throw new UnsupportedMediaTypeError('unsupported_media_type', 'POST application/sparql-query, application/sparql-update or a form (application/x-www-form-urlencoded).');
}

/** The workspace setting that opens the endpoint (SPEC 4.5: the semantic consumer mode). */
async function requireMode(db: Executor, principal: Principal, wanted: 'read' | 'write'): Promise<void> {
  const workspace = await Workspace.query(db).findById(principal.workspaceId);
  const mode = workspace?.semanticConsumerMode ?? 'off';
  if (mode === 'off') throw new PermissionError('semantic_mode_off', 'The SPARQL endpoint is off for this workspace: an administrator turns it on with PATCH /api/v1/organization/settings {"semanticConsumerMode":"read"}.');
  if (wanted === 'write' && mode !== 'write') throw new PermissionError('semantic_mode_read_only', 'This workspace’s SPARQL endpoint takes queries only (semanticConsumerMode read): updates need semanticConsumerMode write.');
}

const packageQuads = new Map<string, Quad[]>();
const boundQuads = new Map<string, Quad[]>();
const CACHE_ENTRIES = 64;

function remember<T>(cache: Map<string, T>, key: string, value: T): T {
  cache.delete(key);
  cache.set(key, value);
  if (cache.size > CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
  return value;
}

function quadsOfPackage(pkg: OntologyPackage): Quad[] {
  return packageQuads.get(pkg.id) ?? remember(packageQuads, pkg.id, new Parser({ format: 'application/n-quads' }).parse(pkg.nquads));
}

/**
 * The triples of one binding's records, up to `budget` records. Reused while the endpoint's
 * snapshot is unchanged (capabilities with snapshots); read again otherwise.
 */
async function quadsOfBinding(db: Executor, principal: Principal, encryptionKey: Buffer, pkg: OntologyPackage, binding: ReadBinding, budget: number): Promise<{ quads: Quad[]; records: number; truncated: boolean }> {
  const endpoint = await DataEndpoint.query(db).withGraphJoined('installation', { joinOperation: 'innerJoin' }).findOne({ 'data_endpoints.id': binding.dataEndpointId, 'data_endpoints.workspaceId': binding.workspaceId });
  if (!endpoint) return { quads: [], records: 0, truncated: false };
  const runtime = findCapability(endpoint.installation!.capability);
  let cacheKey: string | undefined;
  if (runtime.definition.supports.snapshotReads && runtime.currentSnapshot) {
    const snapshot = await runtime.currentSnapshot(capabilityContext(db, endpoint.installation!, encryptionKey), endpoint.target);
    cacheKey = `${binding.id}:${binding.updatedAt.toISOString()}:${pkg.id}:${snapshot.id}:${budget}`;
    const cached = boundQuads.get(cacheKey);
    if (cached) return { quads: cached, records: -1, truncated: false };
  }
  const quads: Quad[] = [];
  let records = 0;
  let cursor: string | undefined;
  do {
    const page = await readEndpointRecords(db, principal, encryptionKey, binding.dataEndpointId, { limit: Math.min(PAGE, budget - records), select: bindingFields(binding.mapping).join(','), cursor });
    for (const record of page.data) {
      const mapped = mapRecord(record, binding.termId, binding.mapping, pkg.terms, pkg.baseIri);
      if (mapped) quads.push(...mapped.quads);
    }
    records += page.data.length;
    cursor = page.metadata.nextCursor ?? undefined;
  } while (cursor && records < budget);
  const truncated = Boolean(cursor);
  if (cacheKey && !truncated) remember(boundQuads, cacheKey, quads);
  return { quads, records, truncated };
}

/** The dataset one caller queries: the active package and the bound records it may read. */
export async function sparqlDataset(db: Executor, principal: Principal, encryptionKey: Buffer, project: Project): Promise<{ store: Store; pkg: OntologyPackage; truncated: boolean; withheldBindings: number }> {
  const pkg = await activePackage(db, project);
  if (!pkg) throw new NotFoundError('ontology', 'This project has no compiled ontology package yet: compile and activate one before querying.');
  const store = new Store(quadsOfPackage(pkg));
  const { readable, withheld } = await readableBindings(db, principal, project);
  let budget = MAX_BOUND_RECORDS;
  let truncated = false;
  for (const binding of readable) {
    if (budget <= 0) {
      truncated = true;
      break;
    }
    const part = await quadsOfBinding(db, principal, encryptionKey, pkg, binding, budget);
    store.addQuads(part.quads);
    if (part.records > 0) budget -= part.records;
    truncated ||= part.truncated;
  }
  return { store, pkg, truncated, withheldBindings: withheld };
}

export interface SparqlAnswer {
  status: number;
  body: string;
  contentType: string;
  headers: Record<string, string>;
}

/** Answers one protocol request: checks mode, scopes and parameters, then evaluates a query or applies an update as governed writes. */
export async function answerSparql(deps: SourceWriteDependencies, principal: Principal, project: Project, request: SparqlRequest): Promise<SparqlAnswer> {
  const { db, encryptionKey } = deps;
  if (request.graphParameters) {
    throw new BadRequestError('graph_parameters_refused', 'default-graph-uri and named-graph-uri are not accepted: the dataset is the project’s active package and the bound records your key may read.');
  }
  const text = request.update ?? request.query ?? '';
  if (Buffer.byteLength(text) > MAX_SPARQL_BYTES) throw new PayloadTooLargeError('request_too_large', `SPARQL request text may be at most ${MAX_SPARQL_BYTES} bytes.`);
  const parsed = parseSparql(text);
  if (request.update !== undefined || parsed.kind === 'update') {
    if (request.method !== 'POST') throw new BadRequestError('update_over_get', 'SPARQL updates must be sent with POST.');
    await requireMode(db, principal, 'write');
    if (!hasScope(principal, 'sparql:update')) throw new PermissionError('insufficient_scope', 'SPARQL updates need the sparql:update scope.', { requiredScopes: ['sparql:update'] });
    if (request.query !== undefined) throw new InputError('update_in_query', 'An update was sent as a query: POST it as application/sparql-update or in update=.');
    const applied = await applySparqlUpdate(deps, principal, project, text, request.idempotencyKey);
    return { status: applied.pending ? 202 : 200, body: JSON.stringify(applied), contentType: 'application/json; charset=utf-8', headers: {} };
  }
  await requireMode(db, principal, 'read');
  if (!hasScope(principal, 'sparql:query')) throw new PermissionError('insufficient_scope', 'SPARQL queries need the sparql:query scope.', { requiredScopes: ['sparql:query'] });
  const kind = parsed.queryType === 'CONSTRUCT' || parsed.queryType === 'DESCRIBE' ? 'quads' : parsed.queryType === 'ASK' ? 'boolean' : 'bindings';
  const mediaType = negotiate(request.accept, kind);
  if (!mediaType) throw new NotAcceptable(kind);
  await assertCredit(db, principal.workspaceId, 'sparql_query');
  const dataset = await sparqlDataset(db, principal, encryptionKey, project);
  const started = Date.now();
  const result = await evaluateQuery(dataset.store, text, SPARQL_LIMITS);
  await meter(db, { workspaceId: principal.workspaceId, projectId: project.id, kind: 'sparql_query', ref: randomUUID(), actor: principal, quantities: { query: 1 } });
  logger.debug({ projectId: project.id, queryType: parsed.queryType, ms: Date.now() - started, triples: dataset.store.size }, 'sparql query');
  return {
    status: 200,
    body: await serializeResult(result, mediaType),
    contentType: `${mediaType}; charset=utf-8`,
    headers: {
      'Weft-Ontology-Package': dataset.pkg.id,
      ...(dataset.truncated ? { 'Weft-Dataset-Truncated': 'true' } : {}),
      ...(dataset.withheldBindings ? { 'Weft-Withheld-Bindings': String(dataset.withheldBindings) } : {}),
      Vary: 'Accept',
    },
  };
}

class NotAcceptable extends NotAcceptableError {
  constructor(kind: string) {
    super('not_acceptable', kind === 'quads' ? 'CONSTRUCT and DESCRIBE answer text/turtle, application/n-triples or application/ld+json.' : 'SELECT and ASK answer application/sparql-results+json, application/sparql-results+xml, text/csv or text/tab-separated-values (CSV and TSV for SELECT only).');
  }
}
