import type { OperationContext } from '../operations/context';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import type { PageRequest } from '../shared/pagination';
import { createQuery, deleteQuery, getQuery, listQueries, QueryInput, replaceQuery } from './published-queries';
import { cancelJob, ExecuteBody, executeQuery, listExecutions } from './query-execution';
import { listReleases, publishRelease, PublishInput, releaseDiff, retireRelease } from './query-releases';
import type { JsonSchema } from '../../core/schema-validator';
import { idParams, listQuery, listResponse, timestamp, uuid } from '../../schemas/common';
import { observeQuery } from '../../observability/metrics';
import { executeBodySchema, executeOptionsQuery, jobParams, publishReleaseBody, queryExecutionsQuery, queryInputSchema, queryParams, releaseDiffQuery, releaseParams, retireReleaseBody } from '../../schemas/published-queries';

const PROJECT = { project: true } as const;

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

type QueryParams = { project_id: string; query_id: string };

/** Executing a published release; the alias route under /ontology/queries has its own name (SPEC 4.5). */
const executeOperation = (name: string, alias: boolean) => defineOperation({
  name,
  summary: alias ? 'Alias of POST /api/v1/projects/{project_id}/queries/{query_id}/execute.' : 'Execute a published query release.',
  access: { scopes: { anyOf: ['queries:execute'] }, ...PROJECT, grants: 'read' as const },
  effect: 'external',
  input: { params: queryParams, query: executeOptionsQuery, body: executeBodySchema },
  output: { 200: { description: 'Succeeded', schema: executionResponse }, 202: { description: 'Pending: follow metadata.continuation', schema: executionResponse } },
  async run(ctx: OperationContext, { params, query, body }: RequestInput<QueryParams, { version?: number; cursor?: string }, ExecuteBody>): Promise<Reply> {
    return observeQuery('published_query', () => executeQuery(ctx, params.query_id, body ?? {}, query));
  },
});

export const executeQueryOperation = executeOperation('executeQuery', false);
export const executeOntologyQueryOperation = executeOperation('executeOntologyQuery', true);

export const listQueriesOperation = defineOperation({
  name: 'listQueries',
  summary: 'Published queries of the project.',
  access: { scopes: { anyOf: ['queries:read'] }, ...PROJECT },
  effect: 'read',
  input: { params: idParams('project_id'), query: listQuery() },
  output: { 200: { description: 'A page of queries', schema: listResponse('queries', querySchema) } },
  async run(ctx: OperationContext, { query }: RequestInput<{ project_id: string }, PageRequest, undefined>): Promise<Reply> {
    return { body: await listQueries(ctx, query) };
  },
});

export const createQueryOperation = defineOperation({
  name: 'createQuery',
  summary: 'Define a query: validated against the active ontology, its bindings and its contracts.',
  access: { scopes: { anyOf: ['queries:write'] }, actor: 'accountable' as const, ...PROJECT },
  effect: 'write',
  input: { params: idParams('project_id'), body: queryInputSchema },
  idempotent: true,
  output: { 201: { description: 'The query and its first version', schema: { type: 'object', required: ['query'], properties: { query: querySchema } } } },
  async run(ctx: OperationContext, { body }: RequestInput<{ project_id: string }, Record<string, never>, QueryInput>): Promise<Reply> {
    return { status: 201, body: { query: await createQuery(ctx, body) } };
  },
});

export const getQueryOperation = defineOperation({
  name: 'getQuery',
  summary: 'One query with its current version.',
  access: { scopes: { anyOf: ['queries:read'] }, ...PROJECT },
  effect: 'read',
  input: { params: queryParams },
  output: { 200: { description: 'The query', schema: { type: 'object', required: ['query'], properties: { query: querySchema } } } },
  async run(ctx: OperationContext, { params }: RequestInput<QueryParams, Record<string, never>, undefined>): Promise<Reply> {
    return { body: { query: await getQuery(ctx, params.query_id) } };
  },
});

export const replaceQueryOperation = defineOperation({
  name: 'replaceQuery',
  summary: 'Edit a query: a new query version UUID. Releases keep the versions they pinned.',
  access: { scopes: { anyOf: ['queries:write'] }, actor: 'accountable' as const, ...PROJECT },
  effect: 'write',
  input: { params: queryParams, body: queryInputSchema },
  output: { 200: { description: 'The query and its new version', schema: { type: 'object', required: ['query'], properties: { query: querySchema } } } },
  async run(ctx: OperationContext, { params, body }: RequestInput<QueryParams, Record<string, never>, QueryInput>): Promise<Reply> {
    return { body: { query: await replaceQuery(ctx, params.query_id, body) } };
  },
});

export const deleteQueryOperation = defineOperation({
  name: 'deleteQuery',
  summary: 'Delete a query and its releases (consumers lose it).',
  access: { scopes: { anyOf: ['queries:write'] }, actor: 'accountable' as const, ...PROJECT },
  effect: 'write',
  input: { params: queryParams },
  output: { 204: { description: 'Deleted' } },
  async run(ctx: OperationContext, { params }: RequestInput<QueryParams, Record<string, never>, undefined>): Promise<Reply> {
    await deleteQuery(ctx, params.query_id);
    return { status: 204 };
  },
});

export const listQueryReleasesOperation = defineOperation({
  name: 'listQueryReleases',
  summary: 'Releases of a query, newest first.',
  access: { scopes: { anyOf: ['queries:read'] }, ...PROJECT },
  effect: 'read',
  input: { params: queryParams },
  output: { 200: { description: 'Releases', schema: { type: 'object', required: ['releases'], properties: { releases: { type: 'array', items: releaseSchema } } } } },
  async run(ctx: OperationContext, { params }: RequestInput<QueryParams, Record<string, never>, undefined>): Promise<Reply> {
    return { body: await listReleases(ctx, params.query_id) };
  },
});

export const diffQueryReleaseOperation = defineOperation({
  name: 'diffQueryRelease',
  summary: 'The breaking changes a release of a query version would make against the previous release.',
  access: { scopes: { anyOf: ['queries:read'] }, ...PROJECT },
  effect: 'read',
  input: { params: queryParams, query: releaseDiffQuery },
  output: { 200: { description: 'The diff', schema: { type: 'object', properties: { previous: { type: ['integer', 'null'] }, breakingChanges: releaseSchema.properties && (releaseSchema.properties as Record<string, JsonSchema>).breakingChanges } } } },
  async run(ctx: OperationContext, { params, query }: RequestInput<QueryParams, { queryVersionId: string }, undefined>): Promise<Reply> {
    await getQuery(ctx, params.query_id);
    return { body: await releaseDiff(ctx.db, params.query_id, query.queryVersionId) };
  },
});

export const publishQueryReleaseOperation = defineOperation({
  name: 'publishQueryRelease',
  summary: 'Publish the expected query version as the next numeric release (a Temporal workflow: validate, diff, activate).',
  access: { scopes: { anyOf: ['queries:publish'] }, actor: 'accountable' as const, ...PROJECT, grants: 'read' as const },
  effect: 'external',
  input: { params: queryParams, body: publishReleaseBody },
  output: { 201: { description: 'The release', schema: { type: 'object', required: ['release'], properties: { release: releaseSchema } } } },
  async run(ctx: OperationContext, { params, body }: RequestInput<QueryParams, Record<string, never>, PublishInput>): Promise<Reply> {
    return { status: 201, body: { release: await publishRelease(ctx, params.query_id, body) } };
  },
});

export const retireQueryReleaseOperation = defineOperation({
  name: 'retireQueryRelease',
  summary: 'Retire a release by its number: executing it then answers 410. A consumer-facing change.',
  access: { scopes: { anyOf: ['queries:publish'] }, actor: 'accountable' as const, ...PROJECT },
  effect: 'write',
  input: { params: releaseParams, body: retireReleaseBody },
  output: { 200: { description: 'The retired release', schema: { type: 'object', required: ['release'], properties: { release: releaseSchema } } } },
  async run(ctx: OperationContext, { params }: RequestInput<QueryParams & { version: number }, Record<string, never>, { status: 'retired' }>): Promise<Reply> {
    return { body: { release: await retireRelease(ctx, params.query_id, Number(params.version)) } };
  },
});

export const cancelQueryJobOperation = defineOperation({
  name: 'cancelQueryJob',
  summary: 'Cancel your own active result job (same key, workspace, project and query). Finished jobs are not targets (409); expired ones are 410.',
  access: { scopes: { anyOf: ['queries:execute'] }, actor: 'accountable' as const, ...PROJECT },
  effect: 'external',
  input: { params: jobParams },
  output: { 200: { description: 'Canceled', schema: { type: 'object', properties: { job: { type: 'object', properties: { id: uuid, status: { const: 'canceled' } } } } } } },
  async run(ctx: OperationContext, { params }: RequestInput<QueryParams & { job_id: string }, Record<string, never>, undefined>): Promise<Reply> {
    return { body: await cancelJob(ctx, params.query_id, params.job_id) };
  },
});

export const listQueryExecutionsOperation = defineOperation({
  name: 'listQueryExecutions',
  summary: 'Every query execution (who, release, input hash, mode, status, duration, rows), newest first: the record metering reads.',
  access: { scopes: { anyOf: ['org:manage'] } },
  effect: 'read',
  input: { query: queryExecutionsQuery },
  output: { 200: { description: 'A page of executions', schema: listResponse('queryExecutions', { type: 'object' }) } },
  async run(ctx: OperationContext, { query }: RequestInput<Record<string, string>, PageRequest & { queryId?: string; projectId?: string; executionId?: string }, undefined>): Promise<Reply> {
    const { limit, offset, ...filter } = query;
    return { body: await listExecutions(ctx, { limit, offset }, filter) };
  },
});

export const queryOperations = [
  executeQueryOperation,
  executeOntologyQueryOperation,
  listQueriesOperation,
  createQueryOperation,
  getQueryOperation,
  replaceQueryOperation,
  deleteQueryOperation,
  listQueryReleasesOperation,
  diffQueryReleaseOperation,
  publishQueryReleaseOperation,
  retireQueryReleaseOperation,
  cancelQueryJobOperation,
  listQueryExecutionsOperation,
];
