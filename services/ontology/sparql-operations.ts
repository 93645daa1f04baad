import type { OperationContext } from '../operations/context';
import { invokeWithin } from '../operations/invoke';
import { defineOperation, Reply, RequestInput, type ResponseSpec } from '../operations/operation';
import { answerSparqlQuery, readSparqlAsk, SparqlAnswer, sparqlRequestFrom } from './sparql';
import { checkIdempotencyKey } from '../operations/idempotency';
import { applySparqlUpdate } from './sparql-updates';
import { loadDatasetCatalog, requireSemanticMode } from './sparql-dataset';
import { InputError } from '../../core/errors';
import { idParams } from '../../schemas/common';
import { sparqlGetQuery, sparqlPostQuery } from '../../schemas/ontology';
import { writeActionSchema } from '../../schemas/source-writes';
import { countRefusal, observeQuery } from '../../observability/metrics';

export const RESULT_TYPES = ['application/sparql-results+json', 'application/sparql-results+xml', 'text/csv', 'text/tab-separated-values', 'text/turtle', 'application/n-triples', 'application/ld+json', 'application/rdf+xml'];

/** The protocol's results: one answer in the format the Accept header chose, and what data it used. */
const results: Record<number, ResponseSpec> = {
  200: {
    description: 'The results, in the negotiated format',
    contentType: RESULT_TYPES.join(', '),
    schema: { type: 'string' },
    headers: {
      'Weft-Dataset-Version': { description: 'Names the data the answer used (the package and each graph’s version): equal values, equal data.', schema: { type: 'string' } },
      'Weft-Dataset-Triples': { description: 'Triples in the dataset the query ran over.', schema: { type: 'integer' } },
      'Weft-Ontology-Package': { description: 'The active package the dataset holds.', schema: { type: 'string', format: 'uuid' } },
      'Weft-Withheld-Bindings': { description: 'Bindings of the project whose data this key may not read (absent when none).', schema: { type: 'integer' } },
      'Server-Timing': { description: 'The query thread’s share of the time (W3C Server Timing): `evaluation;dur=<ms>, serialization;dur=<ms>`.', schema: { type: 'string' } },
    },
  },
};

/** An update's answer: the governed writes it proposed, applied (200) or awaiting approval (202). */
const updateApplied = (description: string): ResponseSpec => ({
  description,
  contentType: 'application/json',
  schema: {
    type: 'object',
    required: ['pending', 'writeActions'],
    properties: {
      pending: { type: 'boolean', description: 'Whether a write awaits approval (then the status is 202).' },
      writeActions: { type: 'array', items: writeActionSchema, description: 'The write actions the update became (none when it changed nothing).' },
    },
  },
  headers: { 'Idempotent-Replayed': { description: 'Present (true) when the answer is a retry’s: the first outcome of the same update.', schema: { type: 'string', enum: ['true'] } } },
});

const updateAnswers: Record<number, ResponseSpec> = {
  200: updateApplied('The update’s writes, applied'),
  202: updateApplied('The update’s writes, awaiting approval under the endpoint’s write policy'),
};

/** The POST's answers: a query's results, or an update's writes (200 application/json, or 202 pending). */
const postAnswers: Record<number, ResponseSpec> = {
  200: { ...results[200], description: 'A query’s results in the negotiated format; for an update, its applied writes as application/json (as sparqlUpdate answers)' },
  202: updateAnswers[202],
};

type Params = { project_id: string };

const replyOf = (answer: SparqlAnswer): Reply => ({ status: answer.status, body: answer.body, contentType: answer.contentType, headers: answer.headers });

type QueryInput = { projectId: string; text: string; queryType?: string; accept?: string };
type UpdateInput = { projectId: string; text: string; sentAsQuery: boolean; idempotencyKey?: string };

/** A SPARQL query over the caller's dataset: the package and the bound records its key may read. */
export const sparqlQueryOperation = defineOperation({
  name: 'sparqlQuery',
  summary: 'Evaluate a SPARQL query over the project’s dataset (reached by GET or POST of the protocol).',
  access: { scopes: { allOf: ['sparql:query'] }, project: true, grants: 'read' as const },
  effect: 'read',
  output: results,
  async run(ctx: OperationContext, input: QueryInput): Promise<Reply> {
    return replyOf(await observeQuery('sparql', () => answerSparqlQuery(ctx, input, input.accept)));
  },
});

/**
 * A SPARQL update: INSERT DATA and DELETE DATA on bound records, each proposed as a governed write
 * through submitSourceWrite (its data scopes, shared-resource access, the endpoint's grants and
 * write policy), reached through the `sparql` door.
 */
export const sparqlUpdateOperation = defineOperation({
  name: 'sparqlUpdate',
  summary: 'Apply a SPARQL update as governed writes on the bound endpoints (reached by POST of the protocol).',
  access: { scopes: { allOf: ['sparql:update'] }, project: true, actor: 'accountable' as const, grants: 'read and write' as const },
  effect: 'external',
  output: updateAnswers,
  async run(ctx: OperationContext, input: UpdateInput): Promise<Reply> {
    requireSemanticMode(await loadDatasetCatalog(ctx.deps, ctx.db, ctx.principal.workspaceId, ctx.project.id), 'write');
    if (input.sentAsQuery) throw new InputError('update_in_query', 'An update was sent as a query: POST it as application/sparql-update or in update=.');
    const { replayed, ...applied } = await applySparqlUpdate(ctx, input.text, input.idempotencyKey);
    // A retry's answer is the first outcome, marked like every idempotent replay.
    return { status: applied.pending ? 202 : 200, body: JSON.stringify(applied), contentType: 'application/json; charset=utf-8', headers: replayed ? { 'Idempotent-Replayed': 'true' } : {} };
  },
});

export const sparqlQueryGetOperation = defineOperation({
  name: 'sparqlQueryGet',
  summary: 'SPARQL query by GET ?query= (reads only; updates need POST).',
  access: sparqlQueryOperation.access,
  effect: 'read',
  input: { params: idParams('project_id'), query: sparqlGetQuery },
  output: results,
  async run(ctx: OperationContext, { rawQuery, headers }: RequestInput<Params, Record<string, unknown>, undefined>): Promise<Reply> {
    const ask = countRefusal('sparql', () => readSparqlAsk(sparqlRequestFrom('GET', rawQuery ?? {}, undefined, undefined, undefined), ctx.deps.sparqlMemory.parses));
    return sparqlQueryOperation.run(ctx, { projectId: ctx.project.id, text: ask.text, queryType: ask.queryType, accept: headers?.accept || undefined });
  },
});

/**
 * The protocol's POST: the request itself says whether it is a query or an update (its media type,
 * its form field, its text), and each is its own operation with its own declared access, invoked
 * as this key. This operation only admits keys that may do one of the two.
 */
export const sparqlQueryPostOperation = defineOperation({
  name: 'sparqlQueryPost',
  summary: 'SPARQL query or update by POST: application/sparql-query, application/sparql-update, or a form with query= or update=. A query has sparqlQuery’s access, an update sparqlUpdate’s.',
  access: { scopes: { anyOf: ['sparql:query', 'sparql:update'] }, project: true },
  effect: 'external',
  input: { params: idParams('project_id'), query: sparqlPostQuery },
  output: postAnswers,
  async run(ctx: OperationContext, { rawQuery, headers, body, bodyType }: RequestInput<Params, Record<string, unknown>, string>): Promise<Reply> {
    // The same rule as on every idempotent route, whatever the request turns out to be.
    const idempotencyKey = headers?.['idempotency-key'] ? checkIdempotencyKey(headers['idempotency-key']) : undefined;
    const ask = countRefusal('sparql', () => readSparqlAsk(sparqlRequestFrom('POST', rawQuery ?? {}, bodyType, body, undefined), ctx.deps.sparqlMemory.parses));
    const projectId = ctx.project.id;
    if (!ask.update) return (await invokeWithin(ctx, ctx.door, sparqlQueryOperation, { projectId, text: ask.text, queryType: ask.queryType, accept: headers?.accept || undefined })).output;
    return (await invokeWithin(ctx, ctx.door, sparqlUpdateOperation, { projectId, text: ask.text, sentAsQuery: ask.sentAsQuery, idempotencyKey })).output;
  },
});

export const sparqlOperations = [
  sparqlQueryGetOperation,
  sparqlQueryPostOperation,
  sparqlQueryOperation,
  sparqlUpdateOperation,
];
