import { sparqlQueryGetOperation, sparqlQueryPostOperation } from '../../services/ontology/sparql-operations';
import { staticContentOperation } from '../../services/shared/health-operations';
import { defineRoute, RouteSpec } from '../route-spec';
import { MAX_SPARQL_BYTES } from '../../services/ontology/sparql';
import { renderSparqlPage, SPARQL_PAGE_SCRIPT, yasguiAsset } from '../sparql-page';
import { IDEMPOTENCY_KEY_SCHEMA } from '../../services/operations/idempotency';

// The SPARQL 1.1 Protocol endpoint of a project (SPEC 4.5).

const PATH = '/api/v1/projects/:project_id/ontology/sparql';
const TAG = 'SPARQL';
const DESCRIPTION = [
  'The dataset is the project’s active ontology package plus the records of bound terms your key may read (bindings whose named read grants it lacks are left out, so two keys can see different answers).',
  'The workspace’s semantic consumer mode must be on (PATCH /api/v1/organization/settings), else 403 semantic_mode_off.',
  'Results by Accept: SELECT and ASK as SPARQL JSON (default), XML, and for SELECT CSV and TSV; CONSTRUCT and DESCRIBE as Turtle (default), N-Triples, JSON-LD or RDF/XML (application/rdf+xml; application/xml and text/xml name it for graphs); 406 otherwise.',
  `A query or update that does not parse is a 400 malformed_query, as the SPARQL 1.1 Protocol requires (the problem says at which line the parser stopped). default-graph-uri and named-graph-uri are refused (400 graph_parameters_refused); FROM and SERVICE in a query or update parse but are refused (422 external_graph_refused, service_refused). Request text over ${MAX_SPARQL_BYTES} bytes is a 413. Each query has a time and result-size limit (422 query_timeout or result_too_large) and runs over all the data: a dataset past the installation’s bound is a 422 dataset_too_large naming the bound and the size. A workspace runs a configured number of queries at once; more wait briefly, then 429 sparql_concurrency_limit with Retry-After.`,
].join(' ');
/** The protocol's refusals of the text, beside the statuses every route documents. */
const BAD_REQUEST = { status: 400, description: 'The query or update does not parse (malformed_query, with the line the parser stopped at), as the SPARQL 1.1 Protocol requires; or default-graph-uri or named-graph-uri were sent (graph_parameters_refused); or an update came by GET (update_over_get).' };
const REFUSED = { status: 422, description: 'The text parses but is refused: FROM or FROM NAMED (external_graph_refused), SERVICE (service_refused); or the query failed while it ran (query_timeout, result_too_large, dataset_too_large, query_failed); or an update Weft does not apply (update_form_not_supported, update_outside_bound_data, …); or a request field is missing or invalid (query_required, invalid_idempotency_key).' };

/** The page and its assets forbid inline scripts and any origin but this one. */
const PAGE_HEADERS = { 'Content-Security-Policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'", 'Cache-Control': 'no-store' };

function asset(path: string, contentType: string, text: () => string): RouteSpec {
  return defineRoute({
    method: 'get',
    path,
    operation: staticContentOperation,
    summary: 'An asset of the SPARQL query page.',
    tag: TAG,
    internal: true,
    // HTTP's alone: staticContentOperation serves every page and asset, each its own answer.
    responses: { 200: { description: 'The asset', contentType } },
    input: () => ({ render: () => ({ body: text(), contentType, headers: { 'Cache-Control': 'public, max-age=3600' } }) }),
  }) as RouteSpec;
}

export const sparqlRoutes: RouteSpec[] = [
  defineRoute({
    method: 'get',
    path: '/sparql',
    operation: staticContentOperation,
    tag: TAG,
    // A page for people, like /docs: outside the versioned API and its document.
    internal: true,
    // HTTP's alone, as the assets' below.
    responses: { 200: { description: 'The HTML page', contentType: 'text/html' } },
    input: () => ({ render: () => ({ body: renderSparqlPage(), contentType: 'text/html; charset=utf-8', headers: PAGE_HEADERS }) }),
  }) as RouteSpec,
  asset('/sparql/yasgui.min.js', 'text/javascript; charset=utf-8', () => yasguiAsset('yasgui.min.js')),
  asset('/sparql/yasgui.min.css', 'text/css; charset=utf-8', () => yasguiAsset('yasgui.min.css')),
  asset('/sparql/page.js', 'text/javascript; charset=utf-8', () => SPARQL_PAGE_SCRIPT),
  defineRoute({
    method: 'get',
    path: PATH,
    operation: sparqlQueryGetOperation,
    stopsWhenClientGoes: true,
    description: DESCRIPTION,
    tag: TAG,
    errors: [BAD_REQUEST, REFUSED, { status: 406 }, { status: 413 }, { status: 429 }],
  }) as RouteSpec,
  defineRoute({
    method: 'post',
    path: PATH,
    operation: sparqlQueryPostOperation,
    stopsWhenClientGoes: true,
    description: `${DESCRIPTION} Updates need sparql:update and semanticConsumerMode write, and go through governed writes: INSERT DATA and DELETE DATA on records of bound terms become one governed write action on the bound endpoint (upsert, clearing values, or deleting records) under its write policy, grants and approvals, against its current snapshot; the answer is {pending, writeActions} (202 when approval is needed). Other update forms and changes to the compiled ontology are refused. An Idempotency-Key header makes a retry return the first outcome. The published-query JSON body is refused (415).`,
    tag: TAG,
    rawBody: {
      mediaTypes: ['application/sparql-query', 'application/sparql-update', 'application/x-www-form-urlencoded'],
      maxBytes: MAX_SPARQL_BYTES,
      description: 'The query or update text, or a form.',
      refusals: {
        'application/json': { code: 'published_query_body_refused', message: 'The SPARQL endpoint takes SPARQL text, not the published-query JSON body: POST application/sparql-query, or execute the published query at …/queries/{query_id}/execute.' },
      },
    },
    errors: [BAD_REQUEST, REFUSED, { status: 406 }, { status: 429 }],
    // Not `idempotent` (that needs the request transaction): updates hand the key to their governed write actions.
    headers: [{ name: 'Idempotency-Key', description: 'For updates (8 to 200 visible ASCII characters, else 422 invalid_idempotency_key): a retry with the same key returns the first outcome.', schema: { ...IDEMPOTENCY_KEY_SCHEMA } }],
  }) as RouteSpec,
];
