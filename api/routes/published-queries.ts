import { listQueriesOperation, createQueryOperation, getQueryOperation, replaceQueryOperation, deleteQueryOperation, listQueryReleasesOperation, diffQueryReleaseOperation, publishQueryReleaseOperation, retireQueryReleaseOperation, cancelQueryJobOperation, listQueryExecutionsOperation } from '../../services/ontology/query-operations';
import type { Operation } from '../../services/operations/operation';
import { executeOntologyQueryOperation, executeQueryOperation } from '../../services/ontology/query-operations';
import { defineRoute, RouteSpec } from '../route-spec';
import { EXECUTION_DEFAULTS } from '../../services/ontology/query-execution';

// Published queries (SPEC 2.5, 3.1, 3.4, 4.5): definitions, releases, execution and jobs.

const BASE = '/api/v1/projects/:project_id/ontology/queries';
const TAG = 'Published queries';

const executeRoute = (path: string, operation: Operation, alias: boolean) =>
  defineRoute({
    method: 'post',
    path,
    operation,
    summary: alias ? 'Alias of POST /api/v1/projects/{project_id}/queries/{query_id}/execute.' : 'Execute a published query release.',
    description: [
      `Needs queries:execute plus the named read grants of the bindings the query reads. ?version=n selects a release; without it the selected release (the newest published, not retired) runs; a retired release is 410.`,
      `The answer is 200 {status: succeeded, data, metadata} when the query finishes within ${EXECUTION_DEFAULTS.syncBudgetMs} ms; otherwise 202 {status: pending, metadata: {job, continuation}} while a Temporal workflow finishes it.`,
      `Continuation flow: POST execute again with ?cursor=<metadata.continuation> (same key): 202 while the job runs, then 200 pages of rows, each with the next continuation (null at the end). Job results expire ${EXECUTION_DEFAULTS.resultsTtlMs / 60000} minutes after the job ends; then 410. A job can be canceled with DELETE …/jobs/{job_id}; there is no GET on jobs.`,
    ].join(' '),
    tag: TAG,
    errors: [{ status: 410 }],
  }) as RouteSpec;

export const publishedQueryRoutes: RouteSpec[] = [
  defineRoute({
    method: 'get',
    path: BASE,
    operation: listQueriesOperation,
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'post',
    path: BASE,
    operation: createQueryOperation,
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: `${BASE}/:query_id`,
    operation: getQueryOperation,
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'put',
    path: `${BASE}/:query_id`,
    operation: replaceQueryOperation,
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'delete',
    path: `${BASE}/:query_id`,
    operation: deleteQueryOperation,
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: `${BASE}/:query_id/releases`,
    operation: listQueryReleasesOperation,
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: `${BASE}/:query_id/releases/diff`,
    operation: diffQueryReleaseOperation,
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'post',
    path: `${BASE}/:query_id/releases`,
    operation: publishQueryReleaseOperation,
    description: 'expectedQueryVersionId must be the query’s current version (else 409 query_version_stale). Breaking changes against the previous release (a removed output field, a changed output type, a new required input, a narrowed input type) need acknowledgeBreakingChanges: true, else 409 breaking_changes listing them.',
    tag: TAG,
    errors: [{ status: 503 }],
  }) as RouteSpec,
  defineRoute({
    method: 'patch',
    path: `${BASE}/:query_id/releases/:version`,
    operation: retireQueryReleaseOperation,
    tag: TAG,
  }) as RouteSpec,
  executeRoute('/api/v1/projects/:project_id/queries/:query_id/execute', executeQueryOperation, false),
  executeRoute(`${BASE}/:query_id/execute`, executeOntologyQueryOperation, true),
  defineRoute({
    method: 'delete',
    path: '/api/v1/projects/:project_id/queries/:query_id/jobs/:job_id',
    operation: cancelQueryJobOperation,
    tag: TAG,
    errors: [{ status: 410 }],
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: '/api/v1/query-executions',
    operation: listQueryExecutionsOperation,
    tag: TAG,
  }) as RouteSpec,
];

