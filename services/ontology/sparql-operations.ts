import type { OperationContext } from '../operations/context';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import { answerSparql, sparqlRequestFrom } from './sparql';
import { checkIdempotencyKey } from '../operations/idempotency';

export const RESULT_TYPES = ['application/sparql-results+json', 'application/sparql-results+xml', 'text/csv', 'text/tab-separated-values', 'text/turtle', 'application/n-triples', 'application/ld+json'];

type Params = { project_id: string };

export const sparqlQueryGetOperation = defineOperation({
  name: 'sparqlQueryGet',
  summary: 'SPARQL query by GET ?query= (reads only; updates need POST).',
  access: { scopes: { anyOf: ['sparql:query'] }, project: true },
  effect: 'read',
  async run({ db, principal, project, deps }: OperationContext, { rawQuery, headers }: RequestInput<Params, Record<string, unknown>, undefined>): Promise<Reply> {
    const request = sparqlRequestFrom('GET', rawQuery ?? {}, undefined, undefined, headers?.accept || undefined);
    const answer = await answerSparql({ ...deps, db }, principal, project, request);
    return { status: answer.status, body: answer.body, contentType: answer.contentType, headers: answer.headers };
  },
});

export const sparqlQueryPostOperation = defineOperation({
  name: 'sparqlQueryPost',
  summary: 'SPARQL query or update by POST: application/sparql-query, application/sparql-update, or a form with query= or update=.',
  access: { scopes: { anyOf: ['sparql:query', 'sparql:update'] }, project: true, actor: 'accountable' as const },
  effect: 'external',
  async run({ principal, project, deps }: OperationContext, { rawQuery, headers, body, bodyType }: RequestInput<Params, Record<string, unknown>, string>): Promise<Reply> {
    // The same rule as on every idempotent route: the key was passed on unchecked before.
    const idempotencyKey = headers?.['idempotency-key'] ? checkIdempotencyKey(headers['idempotency-key']) : undefined;
    const request = { ...sparqlRequestFrom('POST', rawQuery ?? {}, bodyType, body, headers?.accept || undefined), idempotencyKey };
    const answer = await answerSparql(deps, principal, project, request);
    return { status: answer.status, body: answer.body, contentType: answer.contentType, headers: answer.headers };
  },
});

export const sparqlOperations = [
  sparqlQueryGetOperation,
  sparqlQueryPostOperation,
];
