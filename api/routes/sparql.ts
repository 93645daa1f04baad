import { defineRoute, RouteSpec } from '../route-spec';
import { answerSparql, MAX_SPARQL_BYTES, sparqlRequestFrom } from '../../services/ontology/sparql';
import { idParams } from '../schemas/common';
import { renderSparqlPage, SPARQL_PAGE_SCRIPT, yasguiAsset } from '../sparql-page';
import type { JsonSchema } from '../../core/schema-validator';
import { checkIdempotencyKey, IDEMPOTENCY_KEY_SCHEMA } from '../middleware/idempotency';

// The SPARQL 1.1 Protocol endpoint of a project (SPEC 4.5).

const PATH = '/api/v1/projects/:project_id/ontology/sparql';
const TAG = 'SPARQL';
export const RESULT_TYPES = ['application/sparql-results+json', 'application/sparql-results+xml', 'text/csv', 'text/tab-separated-values', 'text/turtle', 'application/n-triples', 'application/ld+json'];
const DESCRIPTION = [
  'The dataset is the project’s active ontology package plus the records of bound terms your key may read (bindings whose named read grants it lacks are left out, so two keys can see different answers).',
  'The workspace’s semantic consumer mode must be on (PATCH /api/v1/organization/settings), else 403 semantic_mode_off.',
  'Results by Accept: SELECT and ASK as SPARQL JSON (default), XML, and for SELECT CSV and TSV; CONSTRUCT and DESCRIBE as Turtle (default), N-Triples or JSON-LD; 406 otherwise.',
  `default-graph-uri and named-graph-uri are refused (400 graph_parameters_refused); FROM and SERVICE in a query are refused (422). Request text over ${MAX_SPARQL_BYTES} bytes is a 413. Each query has a time and result-size limit (422 query_timeout or result_too_large). A malformed query is a 422 malformed_query.`,
].join(' ');
const anyText: JsonSchema = { type: 'string' };
const results = { 200: { description: 'The results, in the negotiated format', contentType: RESULT_TYPES.join(', '), schema: anyText } };

type Params = { project_id: string };

/** The page and its assets forbid inline scripts and any origin but this one. */
const PAGE_HEADERS = { 'Content-Security-Policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'", 'Cache-Control': 'no-store' };

function asset(path: string, contentType: string, text: () => string): RouteSpec {
  return defineRoute({
    method: 'get',
    path,
    operationId: `sparqlPageAsset${path.replace(/\W/g, '_')}`,
    summary: 'An asset of the SPARQL query page.',
    tag: TAG,
    auth: { public: true, reason: 'Static code of the query page; no data.' },
    internal: true,
    responses: { 200: { description: 'The asset', contentType } },
    async handler() {
      return { body: text(), contentType, headers: { 'Cache-Control': 'public, max-age=3600' } };
    },
  }) as RouteSpec;
}

export const sparqlRoutes: RouteSpec[] = [
  defineRoute({
    method: 'get',
    path: '/sparql',
    operationId: 'sparqlQueryPage',
    summary: 'A SPARQL editor (YASGUI) for a project’s endpoint: paste a project id and an API key; the page holds no data.',
    tag: TAG,
    auth: { public: true, reason: 'The page is static; its queries carry the key the user pastes.' },
    // A page for people, like /docs: outside the versioned API and its document.
    internal: true,
    responses: { 200: { description: 'The HTML page', contentType: 'text/html' } },
    async handler() {
      return { body: renderSparqlPage(), contentType: 'text/html; charset=utf-8', headers: PAGE_HEADERS };
    },
  }) as RouteSpec,
  asset('/sparql/yasgui.min.js', 'text/javascript; charset=utf-8', () => yasguiAsset('yasgui.min.js')),
  asset('/sparql/yasgui.min.css', 'text/css; charset=utf-8', () => yasguiAsset('yasgui.min.css')),
  asset('/sparql/page.js', 'text/javascript; charset=utf-8', () => SPARQL_PAGE_SCRIPT),
  defineRoute<Params, Record<string, unknown>>({
    method: 'get',
    path: PATH,
    operationId: 'sparqlQueryGet',
    summary: 'SPARQL query by GET ?query= (reads only; updates need POST).',
    description: DESCRIPTION,
    tag: TAG,
    auth: { scopes: ['sparql:query'], projectParam: 'project_id' },
    params: idParams('project_id'),
    query: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'The SPARQL query.' },
        'default-graph-uri': { description: 'Refused (400).' },
        'named-graph-uri': { description: 'Refused (400).' },
      },
    },
    errors: [{ status: 406 }, { status: 413 }],
    responses: results,
    async handler({ db, principal, project, koa, deps }) {
      const request = sparqlRequestFrom('GET', koa.query as Record<string, unknown>, undefined, undefined, koa.get('Accept') || undefined);
      const answer = await answerSparql({ ...deps, db }, principal, project, request);
      return { status: answer.status, body: answer.body, contentType: answer.contentType, headers: answer.headers };
    },
  }) as RouteSpec,
  defineRoute<Params, Record<string, unknown>, string>({
    method: 'post',
    path: PATH,
    operationId: 'sparqlQueryPost',
    summary: 'SPARQL query or update by POST: application/sparql-query, application/sparql-update, or a form with query= or update=.',
    description: `${DESCRIPTION} Updates need sparql:update and semanticConsumerMode write, and go through governed writes: INSERT DATA and DELETE DATA on records of bound terms become one governed write action on the bound endpoint (upsert, clearing values, or deleting records) under its write policy, grants and approvals, against its current snapshot; the answer is {pending, writeActions} (202 when approval is needed). Other update forms and changes to the compiled ontology are refused. An Idempotency-Key header makes a retry return the first outcome. The published-query JSON body is refused (415).`,
    tag: TAG,
    auth: { scopes: ['sparql:query', 'sparql:update'], projectParam: 'project_id', accountableActor: true },
    transaction: false,
    params: idParams('project_id'),
    query: { type: 'object', properties: { 'default-graph-uri': { description: 'Refused (400).' }, 'named-graph-uri': { description: 'Refused (400).' } } },
    rawBody: {
      mediaTypes: ['application/sparql-query', 'application/sparql-update', 'application/x-www-form-urlencoded'],
      maxBytes: MAX_SPARQL_BYTES,
      description: 'The query or update text, or a form.',
      refusals: {
        'application/json': { code: 'published_query_body_refused', message: 'The SPARQL endpoint takes SPARQL text, not the published-query JSON body: POST application/sparql-query, or execute the published query at …/queries/{query_id}/execute.' },
      },
    },
    errors: [{ status: 406 }],
    // Not `idempotent` (that needs the request transaction): updates hand the key to their governed write actions.
    headers: [{ name: 'Idempotency-Key', description: 'For updates (8 to 200 visible ASCII characters, else 422 invalid_idempotency_key): a retry with the same key returns the first outcome.', schema: { ...IDEMPOTENCY_KEY_SCHEMA } }],
    responses: results,
    async handler({ principal, project, koa, body, bodyType, deps }) {
      // The same rule as on every idempotent route: the key was passed on unchecked before.
      const idempotencyKey = koa.get('Idempotency-Key') ? checkIdempotencyKey(koa.get('Idempotency-Key')) : undefined;
      const request = { ...sparqlRequestFrom('POST', koa.query as Record<string, unknown>, bodyType, body, koa.get('Accept') || undefined), idempotencyKey };
      const answer = await answerSparql(deps, principal, project, request);
      return { status: answer.status, body: answer.body, contentType: answer.contentType, headers: answer.headers };
    },
  }) as RouteSpec,
];
