import { listQueriesOperation, createQueryOperation, getQueryOperation, replaceQueryOperation, deleteQueryOperation, listQueryReleasesOperation, diffQueryReleaseOperation, publishQueryReleaseOperation, retireQueryReleaseOperation, cancelQueryJobOperation, listQueryExecutionsOperation } from '../../services/ontology/query-operations';
import type { Operation } from '../../services/operations/operation';
import { executeOntologyQueryOperation, executeQueryOperation } from '../../services/ontology/query-operations';
import { defineRoute, RouteSpec } from '../route-spec';
import { EXECUTION_DEFAULTS } from '../../services/ontology/query-execution';
import { listResponse, timestamp, uuid } from '../../schemas/common';
import type { JsonSchema } from '../../core/schema-validator';

// Published queries (SPEC 2.5, 3.1, 3.4, 4.5): definitions, releases, execution and jobs.

const BASE = '/api/v1/projects/:project_id/ontology/queries';
const TAG = 'Published queries';

const versionSchema: JsonSchema = {
  type: 'object',
  properties: { id: { ...uuid, description: 'The query version UUID: the expected value when publishing.' }, number: { type: 'integer' }, definition: { type: 'object' }, requiredReadPermissions: { type: 'array', items: { type: 'string' } }, createdAt: timestamp },
};
const querySchema: JsonSchema = {
  type: 'object',
  required: ['id', 'name', 'version', 'selectedRelease'],
  properties: {
    id: uuid,
    projectId: uuid,
    name: { type: 'string' },
    version: versionSchema,
    selectedRelease: { type: ['integer', 'null'], description: 'The release executed without ?version=: the newest published, not retired, release.' },
    createdAt: timestamp,
    updatedAt: timestamp,
  },
};
const releaseSchema: JsonSchema = {
  type: 'object',
  required: ['version', 'queryVersionId', 'status'],
  properties: {
    version: { type: 'integer' },
    queryVersionId: uuid,
    status: { type: 'string', enum: ['published', 'retired'] },
    breakingChanges: { type: 'array', items: { type: 'object', properties: { kind: { type: 'string' }, path: { type: 'string' }, message: { type: 'string' } } } },
    publishedAt: timestamp,
    retiredAt: { type: ['string', 'null'], format: 'date-time' },
  },
};
const executionResponse: JsonSchema = {
  type: 'object',
  required: ['status', 'data', 'metadata'],
  properties: {
    status: { type: 'string', enum: ['succeeded', 'pending'] },
    data: { type: 'array', items: { type: 'object' } },
    metadata: { type: 'object', description: 'queryId, release, rowCount; for jobs job {id, status, expiresAt} and continuation (null on the last page).' },
  },
};

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
    responses: { 200: { description: 'Succeeded', schema: executionResponse }, 202: { description: 'Pending: follow metadata.continuation', schema: executionResponse } },
  }) as RouteSpec;

export const publishedQueryRoutes: RouteSpec[] = [
  defineRoute({
    method: 'get',
    path: BASE,
    operation: listQueriesOperation,
    tag: TAG,
    responses: { 200: { description: 'A page of queries', schema: listResponse('queries', querySchema) } },
  }) as RouteSpec,
  defineRoute({
    method: 'post',
    path: BASE,
    operation: createQueryOperation,
    tag: TAG,
    responses: { 201: { description: 'The query and its first version', schema: { type: 'object', required: ['query'], properties: { query: querySchema } } } },
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: `${BASE}/:query_id`,
    operation: getQueryOperation,
    tag: TAG,
    responses: { 200: { description: 'The query', schema: { type: 'object', required: ['query'], properties: { query: querySchema } } } },
  }) as RouteSpec,
  defineRoute({
    method: 'put',
    path: `${BASE}/:query_id`,
    operation: replaceQueryOperation,
    tag: TAG,
    responses: { 200: { description: 'The query and its new version', schema: { type: 'object', required: ['query'], properties: { query: querySchema } } } },
  }) as RouteSpec,
  defineRoute({
    method: 'delete',
    path: `${BASE}/:query_id`,
    operation: deleteQueryOperation,
    tag: TAG,
    responses: { 204: { description: 'Deleted' } },
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: `${BASE}/:query_id/releases`,
    operation: listQueryReleasesOperation,
    tag: TAG,
    responses: { 200: { description: 'Releases', schema: { type: 'object', required: ['releases'], properties: { releases: { type: 'array', items: releaseSchema } } } } },
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: `${BASE}/:query_id/releases/diff`,
    operation: diffQueryReleaseOperation,
    tag: TAG,
    responses: { 200: { description: 'The diff', schema: { type: 'object', properties: { previous: { type: ['integer', 'null'] }, breakingChanges: releaseSchema.properties && (releaseSchema.properties as Record<string, JsonSchema>).breakingChanges } } } },
  }) as RouteSpec,
  defineRoute({
    method: 'post',
    path: `${BASE}/:query_id/releases`,
    operation: publishQueryReleaseOperation,
    description: 'expectedQueryVersionId must be the query’s current version (else 409 query_version_stale). Breaking changes against the previous release (a removed output field, a changed output type, a new required input, a narrowed input type) need acknowledgeBreakingChanges: true, else 409 breaking_changes listing them.',
    tag: TAG,
    errors: [{ status: 503 }],
    responses: { 201: { description: 'The release', schema: { type: 'object', required: ['release'], properties: { release: releaseSchema } } } },
  }) as RouteSpec,
  defineRoute({
    method: 'patch',
    path: `${BASE}/:query_id/releases/:version`,
    operation: retireQueryReleaseOperation,
    tag: TAG,
    responses: { 200: { description: 'The retired release', schema: { type: 'object', required: ['release'], properties: { release: releaseSchema } } } },
  }) as RouteSpec,
  executeRoute('/api/v1/projects/:project_id/queries/:query_id/execute', executeQueryOperation, false),
  executeRoute(`${BASE}/:query_id/execute`, executeOntologyQueryOperation, true),
  defineRoute({
    method: 'delete',
    path: '/api/v1/projects/:project_id/queries/:query_id/jobs/:job_id',
    operation: cancelQueryJobOperation,
    tag: TAG,
    errors: [{ status: 410 }],
    responses: { 200: { description: 'Canceled', schema: { type: 'object', properties: { job: { type: 'object', properties: { id: uuid, status: { const: 'canceled' } } } } } } },
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: '/api/v1/query-executions',
    operation: listQueryExecutionsOperation,
    tag: TAG,
    responses: { 200: { description: 'A page of executions', schema: listResponse('queryExecutions', { type: 'object' }) } },
  }) as RouteSpec,
];

