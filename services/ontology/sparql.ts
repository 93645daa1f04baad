import { randomUUID } from 'node:crypto';
import { Parser, Quad, Store } from 'n3';
import { assertCredit, meter } from '../usage/usage';
import { BadRequestError, InputError, NotAcceptableError, NotFoundError, PayloadTooLargeError, PermissionError, UnsupportedMediaTypeError } from '../../core/errors';
import { logger } from '../../core/logger';
import type { Executor } from '../../db/connection';
import { DataEndpoint, OntologyPackage, Project, ReadBinding, Workspace } from '../../db/models';
import { findCapability } from '../../plugins';
import { EMPTY_SNAPSHOT } from '../../plugins/capability';
import { evaluateQuery, parseSparql } from '../../ontology/sparql-engine';
import { negotiate, serializeResult } from '../../ontology/sparql-results';
import { mapRecord } from '../../ontology/term-records';
import { WeightedLru } from '../../ontology/dataset-cache';
import { hasScope, Principal } from '../tenancy/access';
import { capabilityContext } from '../endpoints/data-endpoints';
import { bindingFields, readableBindings } from './read-bindings';
import type { SourceWriteDependencies } from '../endpoints/source-writes';
import { applySparqlUpdate } from './sparql-updates';
import { readEndpointRecords } from '../endpoints/records-read';

// The SPARQL 1.1 Protocol endpoint of a project (SPEC 4.5). The dataset is the active package plus
// the records of the bound terms this caller may read: named grants are applied inside the
// dataset, so two keys can get different answers to one query. Bound records are mapped to
// triples with bounded work, read pinned to their endpoint's current snapshot; the mapped triples,
// and the built store of a whole dataset, are reused while those snapshots are unchanged.

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

const packageQuads = new WeightedLru<Quad[]>(64, 1_000_000);
/** Quads of one binding's records, per binding, package, snapshot and record budget. */
const boundQuads = new WeightedLru<BoundPart>(64, 1_000_000);
/**
 * Built stores, per package and exact list of readable bindings with their snapshots: what a
 * repeated query (and every other key with the same grants) evaluates over without reading,
 * mapping or indexing again. Read-only once built: evaluation never writes to a source.
 */
const datasets = new WeightedLru<Dataset>(8, 1_000_000);
const building = new Map<string, Promise<Dataset>>();

interface Dataset {
  store: Store;
  truncated: boolean;
}

interface BoundPart {
  quads: Quad[];
  /** Records read (each counts against the bound, mapped or not). */
  records: number;
  truncated: boolean;
}

/** A package as queries need it: everything but its serializations (read only when its quads are not kept). */
export type PackageHead = Omit<OntologyPackage, 'nquads' | 'turtle'>;

const HEAD_COLUMNS = ['id', 'ontologyId', 'workspaceId', 'versionId', 'contentHash', 'baseIri', 'tripleCount', 'counts', 'terms', 'compiledByMemberId', 'compiledAt'].map((column) => `ontologyPackages.${column}`);

/** The project's active package (one query), or undefined while none is compiled and activated. */
async function activePackageHead(db: Executor, project: Project): Promise<PackageHead | undefined> {
  return OntologyPackage.query(db)
    .select(HEAD_COLUMNS)
    .join('ontologies', 'ontologies.activePackageId', 'ontologyPackages.id')
    .where({ 'ontologies.projectId': project.id, 'ontologies.workspaceId': project.workspaceId })
    .first();
}

async function quadsOfPackage(db: Executor, pkg: PackageHead): Promise<Quad[]> {
  const cached = packageQuads.get(pkg.id);
  if (cached) return cached;
  const { nquads } = (await OntologyPackage.query(db).findById(pkg.id).select('nquads'))!;
  const quads = new Parser({ format: 'application/n-quads' }).parse(nquads);
  return packageQuads.set(pkg.id, quads, quads.length);
}

/** A readable binding with its endpoint, and the endpoint's current snapshot when its capability has them. */
interface BindingSource {
  binding: ReadBinding;
  endpoint?: DataEndpoint;
  snapshotId?: string;
  /** Identifies the binding's records exactly (binding, endpoint and snapshot); undefined when they cannot be pinned. */
  version?: string;
}

/** The bindings' endpoints in one query, then the current snapshot of each (concurrently). */
async function bindingSources(db: Executor, encryptionKey: Buffer, bindings: ReadBinding[]): Promise<BindingSource[]> {
  if (!bindings.length) return [];
  const endpoints = await DataEndpoint.query(db)
    .withGraphJoined('installation', { joinOperation: 'innerJoin' })
    .whereIn('data_endpoints.id', [...new Set(bindings.map((binding) => binding.dataEndpointId))])
    .where('data_endpoints.workspaceId', bindings[0].workspaceId);
  const byId = new Map(endpoints.map((endpoint) => [endpoint.id, endpoint]));
  return Promise.all(
    bindings.map(async (binding): Promise<BindingSource> => {
      const endpoint = byId.get(binding.dataEndpointId);
      if (!endpoint || endpoint.workspaceId !== binding.workspaceId) return { binding, version: `${binding.id}:none` };
      const runtime = findCapability(endpoint.installation!.capability);
      if (!runtime.definition.supports.snapshotReads || !runtime.currentSnapshot) return { binding, endpoint };
      const snapshot = await runtime.currentSnapshot(capabilityContext(db, endpoint.installation!, encryptionKey), endpoint.target);
      return { binding, endpoint, snapshotId: snapshot.id, version: `${binding.id}@${binding.updatedAt.toISOString()}:${endpoint.id}@${endpoint.updatedAt.toISOString()}:${snapshot.id}` };
    }),
  );
}

/**
 * The triples of one binding's records, up to `budget` records. With a snapshot the read is pinned
 * to it and the result is reused while the snapshot is current; otherwise read every time.
 */
async function quadsOfBinding(db: Executor, principal: Principal, encryptionKey: Buffer, pkg: PackageHead, source: BindingSource, budget: number): Promise<BoundPart> {
  const { binding, endpoint, snapshotId } = source;
  if (!endpoint) return { quads: [], records: 0, truncated: false };
  const cacheKey = source.version && `${source.version}:${pkg.id}:${budget}`;
  const cached = cacheKey ? boundQuads.get(cacheKey) : undefined;
  if (cached) return cached;
  const quads: Quad[] = [];
  let records = 0;
  let cursor: string | undefined;
  let leftOver: boolean;
  // The snapshot the cache key names, on every page (a cursor is bound to its read's parameters); an
  // endpoint never written has none to pin. The page size is fixed for the same reason: the last
  // page is cut to the budget here, not by asking for fewer records.
  const pinned = snapshotId && snapshotId !== EMPTY_SNAPSHOT.id ? { snapshotId } : {};
  const limit = Math.min(PAGE, budget);
  do {
    const page = await readEndpointRecords(db, principal, encryptionKey, binding.dataEndpointId, { limit, select: bindingFields(binding.mapping).join(','), cursor, ...pinned });
    const taken = page.data.length > budget - records ? page.data.slice(0, budget - records) : page.data;
    for (const record of taken) {
      const mapped = mapRecord(record, binding.termId, binding.mapping, pkg.terms, pkg.baseIri);
      if (mapped) for (const quad of mapped.quads) quads.push(quad);
    }
    records += taken.length;
    leftOver = taken.length < page.data.length;
    cursor = page.metadata.nextCursor ?? undefined;
  } while (cursor && records < budget);
  const part = { quads, records, truncated: leftOver || Boolean(cursor) };
  return cacheKey ? boundQuads.set(cacheKey, part, quads.length) : part;
}

/** Indexes the package and the readable bindings' records in a new store, within the record bound. */
async function buildDataset(db: Executor, principal: Principal, encryptionKey: Buffer, pkg: PackageHead, sources: BindingSource[]): Promise<Dataset> {
  const store = new Store(await quadsOfPackage(db, pkg));
  let budget = MAX_BOUND_RECORDS;
  let truncated = false;
  for (const source of sources) {
    if (budget <= 0) {
      truncated = true;
      break;
    }
    const part = await quadsOfBinding(db, principal, encryptionKey, pkg, source, budget);
    store.addQuads(part.quads);
    budget -= part.records;
    truncated ||= part.truncated;
  }
  return { store, truncated };
}

/**
 * The dataset one caller queries: the active package and the bound records it may read. When every
 * readable binding's records can be pinned to a snapshot, the store is kept and shared with every
 * request that resolves to the same package, bindings and snapshots (whatever its key, as long as
 * its grants leave it the same bindings): treat it as read-only. Concurrent requests for a store
 * being built wait for that build instead of starting their own.
 */
export async function sparqlDataset(db: Executor, principal: Principal, encryptionKey: Buffer, project: Project): Promise<{ store: Store; pkg: PackageHead; truncated: boolean; withheldBindings: number }> {
  const pkg = await activePackageHead(db, project);
  if (!pkg) throw new NotFoundError('ontology', 'This project has no compiled ontology package yet: compile and activate one before querying.');
  const { readable, withheld } = await readableBindings(db, principal, project);
  const sources = await bindingSources(db, encryptionKey, readable);
  const datasetKey = sources.every((source) => source.version) ? [pkg.id, ...sources.map((source) => source.version)].join('|') : undefined;
  let dataset: Dataset;
  if (!datasetKey) {
    dataset = await buildDataset(db, principal, encryptionKey, pkg, sources);
  } else {
    const kept = datasets.get(datasetKey);
    if (kept) {
      dataset = kept;
    } else {
      let pending = building.get(datasetKey);
      if (!pending) {
        pending = buildDataset(db, principal, encryptionKey, pkg, sources)
          .then((built) => datasets.set(datasetKey, built, built.store.size))
          .finally(() => building.delete(datasetKey));
        building.set(datasetKey, pending);
      }
      dataset = await pending;
    }
  }
  return { store: dataset.store, pkg, truncated: dataset.truncated, withheldBindings: withheld };
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
    const { replayed, ...applied } = await applySparqlUpdate(deps, principal, project, text, request.idempotencyKey);
    // A retry's answer is the first outcome, marked like every idempotent replay.
    return { status: applied.pending ? 202 : 200, body: JSON.stringify(applied), contentType: 'application/json; charset=utf-8', headers: replayed ? { 'Idempotent-Replayed': 'true' } : {} };
  }
  await requireMode(db, principal, 'read');
  if (!hasScope(principal, 'sparql:query')) throw new PermissionError('insufficient_scope', 'SPARQL queries need the sparql:query scope.', { requiredScopes: ['sparql:query'] });
  const kind = parsed.queryType === 'CONSTRUCT' || parsed.queryType === 'DESCRIBE' ? 'quads' : parsed.queryType === 'ASK' ? 'boolean' : 'bindings';
  const mediaType = negotiate(request.accept, kind);
  if (!mediaType) throw new NotAcceptable(kind);
  await assertCredit(db, principal.workspaceId, 'sparql_query');
  const dataset = await sparqlDataset(db, principal, encryptionKey, project);
  const started = Date.now();
  const result = await evaluateQuery(dataset.store, text, SPARQL_LIMITS, { parsed });
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
