import { randomUUID } from 'node:crypto';
import { assertCredit } from '../usage/credit';
import { BadRequestError, InputError, NotAcceptableError, PayloadTooLargeError, UnsupportedMediaTypeError } from '../../core/errors';
import { logger } from '../../core/logger';
import { KeptParses, queryFormOf, SparqlLimits } from '../../ontology/sparql-engine';
import { negotiate, serializeResult } from '../../ontology/sparql-results';
import type { AnswerForm, QueryAnswer } from '../../ontology/sparql-threads/messages';
import type { OperationContext } from '../operations/context';
import { answeredInSql, keptDataset, keptSnapshotsCurrent, loadDatasetCatalog, PackageHead, queryDataset, QueryDatasetHandles, readDataset, requireSemanticMode } from './sparql-dataset';

// The SPARQL 1.1 Protocol endpoint of a project (SPEC 4.5). The dataset is the active package plus
// the graphs of the bound terms this caller may read (sparql-dataset.ts): named grants select
// graphs, so two keys can get different answers to one query. Queries are evaluated in query
// threads (ontology/sparql-threads), never on the API's event loop.

/** SPEC 8: request text of at most 1 MB. */
export const MAX_SPARQL_BYTES = 1024 * 1024;
/** Rows (or triples) one answer may hold; the time limit is WEFT_SPARQL_TIMEOUT_MS. */
export const SPARQL_LIMITS = { maxResults: 10_000 };

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

/** Runs a query in one of the runtime's query threads over the caller's dataset, in the form the caller needs. */
export async function runDatasetQuery(ctx: OperationContext, dataset: QueryDatasetHandles, text: string, limits: SparqlLimits, answer: AnswerForm, signal?: AbortSignal): Promise<QueryAnswer> {
  return ctx.deps.sparqlQueries.pool().run({ workspaceId: ctx.principal.workspaceId, text, limits, graphs: dataset.graphs, answer, signal });
}

/**
 * The caller's dataset for a query: the catalog (one statement), then the kept or newly built
 * graphs. `textOf` gives the query's text for the active package: bound tables are read for it.
 */
export async function sparqlDataset(ctx: OperationContext, textOf?: (pkg: PackageHead) => string): Promise<{ dataset: QueryDatasetHandles; text?: string }> {
  const { db, principal, project } = ctx;
  const catalog = await loadDatasetCatalog(ctx.deps, db, principal.workspaceId, project.id);
  const text = catalog.pkg && textOf ? textOf(catalog.pkg) : undefined;
  return { dataset: await queryDataset(ctx, catalog, text), text };
}

export interface SparqlAnswer {
  status: number;
  body: string;
  contentType: string;
  headers: Record<string, string>;
}

/** What a protocol request asks for, before any access is checked beyond the endpoint's own: its text, parsed. */
export interface SparqlAsk {
  text: string;
  /** The update form was chosen by the request (application/sparql-update, update=) or by the text. */
  update: boolean;
  /** The text was sent as a query (GET ?query=, application/sparql-query, query=). */
  sentAsQuery: boolean;
  queryType?: string;
}

/** Checks what every protocol request must satisfy (no graph parameters, the size bound) and parses it. */
export function readSparqlAsk(request: SparqlRequest, parses: KeptParses): SparqlAsk {
  if (request.graphParameters) {
    throw new BadRequestError('graph_parameters_refused', 'default-graph-uri and named-graph-uri are not accepted: the dataset is the project’s active package and the bound records your key may read.');
  }
  const text = request.update ?? request.query ?? '';
  if (Buffer.byteLength(text) > MAX_SPARQL_BYTES) throw new PayloadTooLargeError('request_too_large', `SPARQL request text may be at most ${MAX_SPARQL_BYTES} bytes.`);
  // A query's form is all this needs (the query thread parses and checks the text); an update, or
  // a text whose form its first keyword does not tell, is parsed here. Kept parses are only read.
  const form = request.update === undefined ? queryFormOf(text) : undefined;
  if (form) return { text, update: false, sentAsQuery: request.query !== undefined, queryType: form };
  const parsed = parses.parse(text);
  const update = request.update !== undefined || parsed.kind === 'update';
  if (update && request.method !== 'POST') throw new BadRequestError('update_over_get', 'SPARQL updates must be sent with POST.');
  return { text, update, sentAsQuery: request.query !== undefined, queryType: parsed.kind === 'update' ? undefined : parsed.queryType };
}

/**
 * Evaluates a query in a query thread over the caller's dataset, metered; the operation has checked
 * its access. The catalog comes from the definition cache.
 */
export async function answerSparqlQuery(ctx: OperationContext, ask: Pick<SparqlAsk, 'text' | 'queryType'>, accept: string | undefined): Promise<SparqlAnswer> {
  const { db, principal, project } = ctx;
  const catalog = await loadDatasetCatalog(ctx.deps, db, principal.workspaceId, project.id);
  requireSemanticMode(catalog, 'read');
  const kind = ask.queryType === 'CONSTRUCT' || ask.queryType === 'DESCRIBE' ? 'quads' : ask.queryType === 'ASK' ? 'boolean' : 'bindings';
  const mediaType = negotiate(accept, kind);
  if (!mediaType) throw new NotAcceptable(kind);
  // The charge and the credit check run beside the query: a warm query's graphs are found at once
  // (the data versions are known from the kept snapshots), so it is sent to its thread first and
  // the API's share of the work overlaps its evaluation. The charge is committed before the
  // answer leaves, and withdrawn if the query fails or the credit is spent. A workspace out of
  // credit is refused as soon as the check says so; a query whose graphs must be built first is
  // not started if the check has said so by then.
  const limits = { timeoutMs: ctx.deps.sparqlMemory.settings.timeoutMs, maxResults: SPARQL_LIMITS.maxResults };
  let refused = false;
  const evaluateOverGraphs = (): Promise<QueryAnswer | undefined> =>
    readDataset(ctx, catalog, ask.text).then((built) => {
      if (refused) return undefined;
      dataset = built;
      return runDatasetQuery(ctx, built, ask.text, limits, { serializeAs: mediaType }, ctx.signal);
    });
  // Kept graphs first (a warm query starts at once); then a SELECT, ASK or CONSTRUCT PostgreSQL can answer over bound
  // tables (sparql-in-sql.ts); else the graphs are read or built.
  const started = performance.now();
  const answerAfresh = (): Promise<QueryAnswer | undefined> =>
    ask.queryType !== 'DESCRIBE'
      ? answeredInSql(ctx, catalog, ask.text, limits.maxResults).then(async (counted) => {
          if (!counted) return evaluateOverGraphs();
          dataset = counted.dataset;
          const answered = performance.now();
          const body = await serializeResult(counted.result, mediaType);
          return { type: 'answer', id: 0, body, path: 'sql', evaluationMs: answered - started, serializationMs: performance.now() - answered } satisfies QueryAnswer;
        })
      : evaluateOverGraphs();
  let dataset: QueryDatasetHandles | undefined = keptDataset(ctx, catalog, ask.text);
  let evaluated: Promise<QueryAnswer | undefined>;
  if (dataset) {
    // The kept snapshots are checked beside the evaluation: a commit this process has not heard of
    // yet (another process's NOTIFY on its way) sends the query to the current snapshots instead.
    const current = keptSnapshotsCurrent(ctx, dataset);
    const afresh = () => {
      dataset = undefined;
      return answerAfresh();
    };
    evaluated = runDatasetQuery(ctx, dataset, ask.text, limits, { serializeAs: mediaType }, ctx.signal).then(
      async (answer) => ((await current) ? answer : afresh()),
      async (error: unknown) => {
        if (await current) throw error;
        return afresh();
      },
    );
  } else evaluated = answerAfresh();
  const ref = randomUUID();
  const charged = ctx.deps.metering.charge(db, { workspaceId: principal.workspaceId, projectId: project.id, kind: 'sparql_query', ref, actor: principal, quantities: { query: 1 } });
  const withdraw = () => charged.then(() => ctx.deps.metering.withdraw(db, principal.workspaceId, 'sparql_query', ref), () => undefined);
  const paid = Promise.all([assertCredit(ctx.deps, db, principal.workspaceId, 'sparql_query', ref), charged]).catch((error: unknown) => {
    refused = true;
    throw error;
  });
  let answer: QueryAnswer;
  try {
    answer = (await Promise.all([evaluated, paid]))[0]!;
  } catch (error) {
    await withdraw();
    throw error;
  }
  if (!dataset) throw new Error('unreachable: an answer without its dataset');
  logger.debug({ projectId: project.id, queryType: ask.queryType, evaluationMs: answer.evaluationMs, path: answer.path, triples: dataset.triples }, 'sparql query');
  return {
    status: 200,
    body: answer.body!,
    contentType: `${mediaType}; charset=utf-8`,
    headers: {
      'Weft-Ontology-Package': dataset.pkg.id,
      'Weft-Dataset-Version': dataset.version,
      'Weft-Dataset-Triples': String(dataset.triples),
      ...(dataset.withheldBindings ? { 'Weft-Withheld-Bindings': String(dataset.withheldBindings) } : {}),
      Vary: 'Accept',
      // Where the answer's time went in the query thread (W3C Server Timing; browsers' network panels show it).
      'Server-Timing': `evaluation;dur=${answer.evaluationMs.toFixed(2)}, serialization;dur=${answer.serializationMs.toFixed(2)}`,
    },
  };
}

class NotAcceptable extends NotAcceptableError {
  constructor(kind: string) {
    super('not_acceptable', kind === 'quads' ? 'CONSTRUCT and DESCRIBE answer text/turtle, application/n-triples, application/ld+json or application/rdf+xml.' : 'SELECT and ASK answer application/sparql-results+json, application/sparql-results+xml, text/csv or text/tab-separated-values (CSV and TSV for SELECT only).');
  }
}
