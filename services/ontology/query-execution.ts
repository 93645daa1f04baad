import { createHash } from 'node:crypto';
import { ConflictError, DomainError, GoneError, InputError, NotFoundError, PermissionError, restoredError } from '../../core/errors';
import { canonicalJson } from '../../core/json-shape';
import { schemaProblems, summarizeProblems } from '../../core/schema-validator';
import { temporalSettings } from '../../core/temporal-config';
import type { Executor } from '../../db/connection';
import { Project, PublishedQuery, QueryExecution, QueryJob, QueryRelease, QueryVersion, StoredError } from '../../db/models';
import { resultOf } from '../../ontology/sparql-threads/plain-result';
import { analyzeTemplate, bindTemplate, jsonValue } from '../../ontology/query-template';
import { queryJobWorkflowId } from '../../workflows/names';
import { missingReadPermissions } from '../tenancy/access';
import type { OperationContext } from '../operations/context';
import { assertCredit } from '../usage/credit';
import { PageRequest, pageOf } from '../shared/pagination';
import { queryTermBindings, requireQuery, selectedRelease } from './published-queries';
import { activePackage } from './ontology';
import { presentExecution } from './presenters';
import { endpointReadGrants } from '../endpoints/data-guard';
import { actorOf, isOwnWork, ownWorkColumns } from '../tenancy/actors';
import { checkingGrants } from '../operations/current-operation';
import { runDatasetQuery } from './sparql';
import { answeredInSql, loadDatasetCatalog, queryDataset, SnapshotPin } from './sparql-dataset';

// Executing a release (SPEC 4.5): within the sync budget the rows come back at once; over it the
// query continues as a job (query-jobs.ts) whose stored rows the caller reads page by page with a
// continuation cursor.

export const EXECUTION_DEFAULTS = { limit: 100, maxLimit: 1000, syncBudgetMs: Number(process.env.WEFT_QUERY_SYNC_BUDGET_MS ?? 2000), jobTimeoutMs: 5 * 60_000, resultsTtlMs: 60 * 60_000, maxRows: 10_000 };

export interface ExecuteBody {
  input?: Record<string, unknown>;
  options?: { limit?: number; offset?: number };
}

interface Resolved {
  query: PublishedQuery;
  release: QueryRelease;
  version: QueryVersion;
}

async function resolveRelease(db: Executor, project: Project, queryId: string, versionNumber?: number): Promise<Resolved> {
  const query = await requireQuery(db, project, queryId);
  // Without ?version, a query whose releases are all retired answers as its newest release would (SPEC 2.5: 410).
  const release = versionNumber === undefined
    ? (await selectedRelease(db, queryId)) ?? (await QueryRelease.query(db).where({ queryId }).orderBy('version', 'desc').first())
    : await QueryRelease.query(db).findOne({ queryId, version: versionNumber });
  if (!release) throw new NotFoundError('release', versionNumber === undefined ? 'The query has no published release to execute; publish one first.' : `The query has no release ${versionNumber}.`);
  if (release.status === 'retired') throw new GoneError('release_retired', `Release ${release.version} is retired; execute another release.`, { version: release.version });
  return { query, release, version: (await QueryVersion.query(db).findById(release.queryVersionId))! };
}

/**
 * The named read grants an execution needs, as they are now: those stored with the version when
 * it was authored, and those the data behind the bindings of its terms requires today (a grant
 * added since, by a binding of any endpoint over the same data, counts at once).
 */
export async function checkGrants(ctx: OperationContext, version: QueryVersion): Promise<void> {
  const { db, principal, project } = ctx;
  const pkg = await activePackage(db, project);
  const facts = pkg && analyzeTemplate(version.definition.sparql, pkg.baseIri).facts;
  const bindings = pkg && facts ? await queryTermBindings(db, project, pkg, facts) : [];
  const dataGrants = await endpointReadGrants(ctx.deps, db, project.workspaceId, [...new Set(bindings.map((binding) => binding.dataEndpointId))]);
  const required = [...new Set([...version.requiredReadPermissions, ...[...dataGrants.values()].flat()])].sort();
  checkingGrants(principal, 'read');
  const missing = missingReadPermissions(principal, required);
  if (missing.length) throw new PermissionError('read_grant_required', `Executing this query needs the named read grants of the data its bindings read: ${missing.join(', ')}. queries:execute alone does not grant them.`, { missingReadPermissions: missing });
}

const inputHash = (input: Record<string, unknown>) => createHash('sha256').update(canonicalJson(input)).digest('hex');

/** Runs a release's query for a caller: contract-checked input, grants-filtered dataset, contract-checked rows. */
export async function runQuery(ctx: OperationContext, version: QueryVersion, input: Record<string, unknown>, page: { limit: number; offset: number }, timeoutMs: number, pin?: SnapshotPin) {
  const { principal } = ctx;
  const catalog = await loadDatasetCatalog(ctx.deps, ctx.db, principal.workspaceId, ctx.project.id);
  if (!catalog.pkg) throw new NotFoundError('ontology', 'This project has no compiled ontology package yet: compile and activate one before querying.');
  const { facts } = analyzeTemplate(version.definition.sparql, catalog.pkg.baseIri);
  if (!facts) throw new ConflictError('query_outdated', 'The released query no longer parses against the active ontology.');
  const text = bindTemplate(facts, input, version.definition.inputSchema as never, page);
  const limits = { timeoutMs, maxResults: EXECUTION_DEFAULTS.maxRows };
  // PostgreSQL answers what it can over bound tables (sparql-in-sql.ts); the evaluator the rest.
  const result = (await answeredInSql(ctx, catalog, text, limits.maxResults, pin, timeoutMs))?.result
    ?? resultOf((await runDatasetQuery(ctx, await queryDataset(ctx, catalog, text, pin, timeoutMs), text, limits, { terms: true })).result!);
  if (result.kind !== 'bindings') throw new ConflictError('query_outdated', 'The released query does not return rows.');
  const projected = facts.projected;
  const rows = result.rows.map((row) => Object.fromEntries(projected.map((name) => [name, jsonValue(row[name])])));
  rows.forEach((row, index) => {
    const problems = schemaProblems(version.definition.outputSchema, row);
    if (problems.length) {
      throw new ConflictError('output_contract_violated', `Row ${index} does not fit the release's output contract: ${summarizeProblems(problems)}. The bound data changed; the query needs a new release.`, { row: index, errors: problems });
    }
  });
  return rows;
}

async function recordExecution(ctx: OperationContext, resolved: Resolved, fields: Partial<QueryExecution>) {
  const { db, deps, principal, project } = ctx;
  const execution = await QueryExecution.query(db).insert({ workspaceId: project.workspaceId, projectId: project.id, queryId: resolved.query.id, releaseVersion: resolved.release.version, ...actorOf(principal), mode: 'sync', status: 'succeeded', ...fields, inputHash: fields.inputHash! });
  if (execution.status === 'succeeded') {
    await deps.metering.meter(db, { workspaceId: project.workspaceId, projectId: project.id, kind: 'query_execution', ref: execution.id, actor: principal, quantities: { execution: 1, row: execution.rowCount ?? 0 } });
  }
}

const sealJobCursor = (jobId: string, offset: number) => Buffer.from(JSON.stringify({ job: jobId, offset })).toString('base64url');

function openJobCursor(text: string): { job: string; offset: number } {
  try {
    const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as { job: string; offset: number };
    if (typeof value.job === 'string' && Number.isInteger(value.offset) && value.offset >= 0) return value;
  } catch {
    // fall through
  }
  throw new InputError('invalid_cursor', 'The continuation cursor is not one this query returned.', [{ path: 'query:cursor', message: 'is not a continuation of this query' }]);
}

/**
 * Executes a release. Finishes within the sync budget: 200 with the rows. Otherwise: 202 with a
 * job (a Temporal workflow runs the query again with a longer limit and stores the rows) and a
 * continuation cursor; POST execute again with ?cursor= to follow it until 200.
 */
export async function executeQuery(ctx: OperationContext, queryId: string, body: ExecuteBody, params: { version?: number; cursor?: string }) {
  const { deps, principal, project } = ctx;
  if (params.cursor) return continueJob(ctx, queryId, params.cursor, body.options?.limit);
  const resolved = await resolveRelease(deps.db, project, queryId, params.version);
  await checkGrants(ctx, resolved.version);
  await assertCredit(deps, deps.db, project.workspaceId, 'query_execution');
  const input = body.input ?? {};
  const problems = schemaProblems(resolved.version.definition.inputSchema, input, { prefix: '/input' });
  if (problems.length) throw new InputError('input_invalid', `The input does not fit release ${resolved.release.version}'s input contract: ${summarizeProblems(problems)}`, problems);
  const page = { limit: Math.min(body.options?.limit ?? EXECUTION_DEFAULTS.limit, EXECUTION_DEFAULTS.maxLimit), offset: body.options?.offset ?? 0 };
  const hash = inputHash(input);
  const started = Date.now();
  // The snapshots the first attempt reads bound tables at: a job goes on at the same ones.
  const pin: SnapshotPin = {};
  try {
    const rows = await runQuery(ctx, resolved.version, input, page, EXECUTION_DEFAULTS.syncBudgetMs, pin);
    await recordExecution(ctx, resolved, { inputHash: hash, durationMs: Date.now() - started, rowCount: rows.length });
    return { status: 200, body: { status: 'succeeded', data: rows, metadata: { queryId, release: resolved.release.version, queryVersionId: resolved.version.id, rowCount: rows.length, limit: page.limit, offset: page.offset, durationMs: Date.now() - started } } };
  } catch (error) {
    if (!(error instanceof DomainError) || error.code !== 'query_timeout') {
      await recordExecution(ctx, resolved, { inputHash: hash, durationMs: Date.now() - started, status: 'failed' });
      throw error;
    }
  }
  // Over the budget: the rest runs as a job.
  const job = await QueryJob.query(deps.db).insertAndFetch({
    workspaceId: project.workspaceId,
    projectId: project.id,
    queryId,
    releaseVersion: resolved.release.version,
    ...actorOf(principal),
    status: 'active',
    input: { input, page, snapshots: pin },
    inputHash: hash,
    workflowId: 'pending',
    expiresAt: new Date(deps.clock.now() + EXECUTION_DEFAULTS.jobTimeoutMs + EXECUTION_DEFAULTS.resultsTtlMs),
  });
  const workflowId = queryJobWorkflowId(job.id);
  await job.$query(deps.db).patch({ workflowId });
  await deps.temporal.workflow.start('queryJobWorkflow', { workflowId, taskQueue: temporalSettings().taskQueues.main, args: [{ jobId: job.id }] });
  await recordExecution(ctx, resolved, { inputHash: hash, mode: 'async', status: 'pending', jobId: job.id });
  return { status: 202, body: pendingBody(job, 0) };
}

function pendingBody(job: QueryJob, offset: number) {
  return { status: 'pending', data: [], metadata: { queryId: job.queryId, release: job.releaseVersion, job: { id: job.id, status: job.status, expiresAt: job.expiresAt.toISOString() }, continuation: sealJobCursor(job.id, offset) } };
}

/** The continuation flow: a page of a finished job's rows, or 202 while it runs; 410 once expired. */
async function continueJob(ctx: OperationContext, queryId: string, cursor: string, limit?: number) {
  const { db, deps, principal, project } = ctx;
  const { job: jobId, offset } = openJobCursor(cursor);
  const job = await QueryJob.query(db).findOne({ id: jobId, queryId, projectId: project.id, workspaceId: project.workspaceId, ...ownWorkColumns(principal) });
  if (!job) throw new NotFoundError('query_job', 'No result job of yours for this query with this cursor.');
  if (job.status === 'expired' || job.expiresAt.getTime() <= deps.clock.now()) {
    if (job.status !== 'expired') await job.$query(db).patch({ status: 'expired', rows: null });
    throw new GoneError('results_expired', 'The results of this job have expired; execute the query again.', { jobId: job.id });
  }
  // A continuation is an execution too: the release must still be live and the key must hold the
  // grants its data needs now, as at the first execution (a grant withdrawn since refuses the rest).
  const resolved = await resolveRelease(db, project, queryId, job.releaseVersion);
  await checkGrants(ctx, resolved.version);
  if (job.status === 'active') return { status: 202, body: pendingBody(job, offset) };
  if (job.status === 'canceled') throw new ConflictError('job_canceled', 'This job was canceled; execute the query again.', { jobId: job.id });
  if (job.status === 'failed') throw restoredError(job.error as StoredError);
  const size = Math.min(limit ?? EXECUTION_DEFAULTS.limit, EXECUTION_DEFAULTS.maxLimit);
  const rows = (job.rows ?? []).slice(offset, offset + size);
  const next = offset + rows.length < (job.rowCount ?? 0) ? sealJobCursor(job.id, offset + rows.length) : null;
  return { status: 200, body: { status: 'succeeded', data: rows, metadata: { queryId, release: job.releaseVersion, job: { id: job.id, status: job.status, expiresAt: job.expiresAt.toISOString() }, rowCount: rows.length, totalRows: job.rowCount, offset, continuation: next } } };
}

/** DELETE of the job route: the caller's own active job (same key, workspace, project and query) is canceled. */
export async function cancelJob(ctx: OperationContext, queryId: string, jobId: string) {
  const { db, deps: { temporal, clock }, principal, project } = ctx;
  const job = await QueryJob.query(db).findOne({ id: jobId, queryId, projectId: project.id, workspaceId: project.workspaceId });
  if (!job || !isOwnWork(principal, job)) throw new NotFoundError('query_job', 'No result job of this API key with this id for this query.');
  if (job.status === 'expired' || job.expiresAt.getTime() <= clock.now()) throw new GoneError('results_expired', 'This job has expired.', { jobId });
  if (job.status !== 'active') throw new ConflictError('job_not_active', `The job is ${job.status}, so it cannot be canceled.`, { status: job.status });
  await job.$query(db).patch({ status: 'canceled', finishedAt: new Date() });
  await temporal.workflow.getHandle(job.workflowId).cancel().catch(() => undefined);
  return { job: { id: job.id, status: 'canceled' } };
}

export async function listExecutions(ctx: OperationContext, page: PageRequest, filter: { queryId?: string; projectId?: string; executionId?: string }) {
  const { db, principal } = ctx;
  const base = QueryExecution.query(db).where({ workspaceId: principal.workspaceId });
  if (filter.executionId) base.where('id', filter.executionId);
  if (filter.queryId) base.where('queryId', filter.queryId);
  if (filter.projectId) base.where('projectId', filter.projectId);
  if (principal.projectIds.length) base.whereIn('projectId', principal.projectIds as string[]);
  const { rows, pagination } = await pageOf(base, page, { column: 'createdAt', order: 'desc' });
  return {
    queryExecutions: rows.map(presentExecution),
    pagination,
  };
}
