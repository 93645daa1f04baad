import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { raw } from 'objection';
import { ConflictError, DomainError, FieldProblem, GoneError, InputError, NotFoundError, PermissionError, restoredError } from '../../core/errors';
import { canonicalJson } from '../../core/json-shape';
import { schemaProblems, summarizeProblems } from '../../core/schema-validator';
import { temporalSettings } from '../../core/temporal-config';
import type { Db, Executor } from '../../db/connection';
import { BreakingChange, Project, PublishedQuery, QueryDefinition, QueryExecution, QueryJob, QueryRelease, QueryVersion, ReadBinding, StoredError } from '../../db/models';
import { evaluateQuery } from '../../ontology/sparql-engine';
import { analyzeTemplate, bindTemplate, jsonValue, TemplateFacts } from '../../ontology/query-template';
import { queryJobWorkflowId, releaseWorkflowId } from '../../workflows/names';
import { ApplicationFailure } from '@temporalio/common';
import { missingReadPermissions, Principal } from '../tenancy/access';
import type { ServiceDependencies } from '../operations/context';
import { activePackage } from './ontology';
import { assertCredit, meter } from '../usage/usage';
import { PageRequest, pageOf } from '../shared/pagination';
import { sparqlDataset } from './sparql';

// Published queries (SPEC 2.5, 3.1, 3.4, 4.5): a SPARQL template with input and output contracts;
// every edit a version (UUID); numeric releases pin a version; execution answers within a short
// budget or continues as a Temporal job whose rows are stored here and read page by page.

export const EXECUTION_DEFAULTS = { limit: 100, maxLimit: 1000, syncBudgetMs: Number(process.env.WEFT_QUERY_SYNC_BUDGET_MS ?? 2000), jobTimeoutMs: 5 * 60_000, resultsTtlMs: 60 * 60_000, maxRows: 10_000 };

export interface QueryInput {
  name: string;
  description?: string;
  sparql: string;
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown>;
}

type Deps = ServiceDependencies;

const presentVersion = (v: QueryVersion) => ({ id: v.id, number: v.number, definition: v.definition, requiredReadPermissions: v.requiredReadPermissions, createdByMemberId: v.createdByMemberId, createdAt: v.createdAt.toISOString() });

export function presentRelease(r: QueryRelease) {
  return { version: r.version, queryVersionId: r.queryVersionId, status: r.status, breakingChanges: r.breakingChanges, publishedByMemberId: r.publishedByMemberId, workflowId: r.workflowId, publishedAt: r.publishedAt.toISOString(), retiredAt: r.retiredAt?.toISOString() ?? null };
}

async function presentQuery(db: Executor, query: PublishedQuery) {
  const version = query.currentVersionId ? await QueryVersion.query(db).findById(query.currentVersionId) : undefined;
  const selected = await selectedRelease(db, query.id);
  return {
    id: query.id,
    projectId: query.projectId,
    name: query.name,
    version: version ? presentVersion(version) : null,
    selectedRelease: selected?.version ?? null,
    createdByMemberId: query.createdByMemberId,
    createdAt: query.createdAt.toISOString(),
    updatedAt: query.updatedAt.toISOString(),
  };
}

/** Authoring checks against the active ontology, its bindings and the contracts; returns the grants the query needs. */
async function validateDefinition(db: Executor, project: Project, input: QueryInput): Promise<{ facts: TemplateFacts; requiredReadPermissions: string[] }> {
  const pkg = await activePackage(db, project);
  if (!pkg) throw new InputError('ontology_required', 'Queries run over the ontology: compile and activate a package first.');
  const problems: FieldProblem[] = [];
  const { facts, problems: templateProblems } = analyzeTemplate(input.sparql, pkg.baseIri);
  problems.push(...templateProblems);
  const inputProps = (input.inputSchema.properties ?? {}) as Record<string, { type?: string }>;
  const outputProps = (input.outputSchema.properties ?? {}) as Record<string, unknown>;
  if (input.inputSchema.type !== 'object') problems.push({ path: '/inputSchema/type', message: 'must be "object"' });
  if (input.outputSchema.type !== 'object') problems.push({ path: '/outputSchema/type', message: 'must be "object" (the schema of one result row)' });
  for (const [name, schema] of Object.entries(inputProps)) {
    if (!['string', 'integer', 'number', 'boolean'].includes(schema.type ?? '')) problems.push({ path: `/inputSchema/properties/${name}/type`, message: 'input parameters are strings, integers, numbers or booleans' });
  }
  if (facts) {
    for (const name of Object.keys(inputProps)) {
      if (!facts.variables.has(name)) problems.push({ path: `/inputSchema/properties/${name}`, message: `the query has no variable $${name} to bind it to` });
      if (facts.projected.includes(name)) problems.push({ path: `/inputSchema/properties/${name}`, message: 'an input parameter cannot also be a result variable' });
    }
    for (const name of Object.keys(outputProps)) {
      if (!facts.projected.includes(name)) problems.push({ path: `/outputSchema/properties/${name}`, message: `the query does not select ?${name}` });
    }
    for (const name of facts.projected) {
      if (!(name in outputProps)) problems.push({ path: '/outputSchema/properties', message: `describe the selected variable ?${name}` });
    }
    const known = new Set([...pkg.terms.classes, ...Object.keys(pkg.terms.properties), ...Object.keys(pkg.terms.links)]);
    for (const term of facts.terms) if (!known.has(term)) problems.push({ path: '/sparql', message: `:${term} is not a term of the active ontology package` });
  }
  for (const [part, schema] of [['inputSchema', input.inputSchema], ['outputSchema', input.outputSchema]] as const) {
    try {
      schemaProblems(schema, {});
    } catch (error) {
      problems.push({ path: `/${part}`, message: `is not a usable JSON Schema: ${(error as Error).message}` });
    }
  }
  if (problems.length) throw new InputError('query_invalid', `The query is invalid: ${summarizeProblems(problems)}`, problems);
  // The grants of every binding of a term the query names: execution needs them all.
  const classes = [...facts!.terms].map((term) => pkg.terms.properties[term]?.domain ?? pkg.terms.links[term]?.from ?? term);
  const bindings = classes.length ? await ReadBinding.query(db).where({ projectId: project.id, status: 'active' }).whereIn('termId', classes) : [];
  return { facts: facts!, requiredReadPermissions: [...new Set(bindings.flatMap((b) => b.requiredReadPermissions))].sort() };
}

async function requireQuery(db: Executor, project: Project, queryId: string, forUpdate = false): Promise<PublishedQuery> {
  const q = PublishedQuery.query(db).findOne({ id: queryId, projectId: project.id, workspaceId: project.workspaceId });
  const found = await (forUpdate ? q.forUpdate() : q);
  if (!found) throw new NotFoundError('query', 'No query with this id in this project.');
  return found;
}

async function addVersion(db: Executor, principal: Principal, query: PublishedQuery, input: QueryInput, requiredReadPermissions: string[]): Promise<QueryVersion> {
  const last = await QueryVersion.query(db).where({ queryId: query.id }).max('number as max').first() as unknown as { max: number | null };
  const definition: QueryDefinition = { description: input.description, sparql: input.sparql, inputSchema: input.inputSchema, outputSchema: input.outputSchema };
  const version = await QueryVersion.query(db).insertAndFetch({ queryId: query.id, number: (last?.max ?? 0) + 1, definition, requiredReadPermissions, createdByMemberId: principal.memberId });
  await query.$query(db).patch({ currentVersionId: version.id, name: input.name, updatedAt: raw('now()') as unknown as Date });
  return version;
}

export async function createQuery(db: Executor, principal: Principal, project: Project, input: QueryInput) {
  const { requiredReadPermissions } = await validateDefinition(db, project, input);
  if (await PublishedQuery.query(db).findOne({ projectId: project.id, name: input.name })) throw new ConflictError('query_name_taken', `This project already has a query named "${input.name}".`);
  const query = await PublishedQuery.query(db).insertAndFetch({ workspaceId: project.workspaceId, projectId: project.id, name: input.name, createdByMemberId: principal.memberId });
  await addVersion(db, principal, query, input, requiredReadPermissions);
  return presentQuery(db, (await PublishedQuery.query(db).findById(query.id))!);
}

/** Every edit is a new query version (a new UUID); releases keep pointing at theirs. */
export async function replaceQuery(db: Executor, principal: Principal, project: Project, queryId: string, input: QueryInput) {
  const query = await requireQuery(db, project, queryId, true);
  const { requiredReadPermissions } = await validateDefinition(db, project, input);
  if (input.name !== query.name && (await PublishedQuery.query(db).findOne({ projectId: project.id, name: input.name }))) throw new ConflictError('query_name_taken', `This project already has a query named "${input.name}".`);
  await addVersion(db, principal, query, input, requiredReadPermissions);
  return presentQuery(db, (await PublishedQuery.query(db).findById(query.id))!);
}

export async function getQuery(db: Executor, project: Project, queryId: string) {
  return presentQuery(db, await requireQuery(db, project, queryId));
}

export async function listQueries(db: Executor, project: Project, page: PageRequest) {
  const { rows, pagination } = await pageOf(PublishedQuery.query(db).where({ projectId: project.id, workspaceId: project.workspaceId }), page);
  return { queries: await Promise.all(rows.map((q) => presentQuery(db, q))), pagination };
}

export async function deleteQuery(db: Executor, project: Project, queryId: string) {
  const query = await requireQuery(db, project, queryId, true);
  if (await QueryJob.query(db).findOne({ queryId, status: 'active' })) throw new ConflictError('query_has_active_jobs', 'The query has active result jobs; cancel them or let them finish first.');
  await query.$query(db).delete();
}

/** The release used when no ?version= is given: the newest published (not retired) one. */
async function selectedRelease(db: Executor, queryId: string): Promise<QueryRelease | undefined> {
  return QueryRelease.query(db).where({ queryId, status: 'published' }).orderBy('version', 'desc').first();
}

export async function listReleases(db: Executor, project: Project, queryId: string) {
  await requireQuery(db, project, queryId);
  return { releases: (await QueryRelease.query(db).where({ queryId }).orderBy('version', 'desc')).map(presentRelease) };
}

type SchemaNode = { type?: string | string[]; properties?: Record<string, SchemaNode>; required?: string[]; enum?: unknown[]; maxLength?: number; maximum?: number; minimum?: number; minLength?: number };
const types = (schema: SchemaNode | undefined) => new Set(schema?.type === undefined ? ['any'] : Array.isArray(schema.type) ? schema.type : [schema.type]);

/**
 * Breaking changes from one release's contracts to the next: an output field removed or its type
 * narrowed (consumers read it), an input newly required or its type narrowed (consumers send it).
 */
export function contractChanges(before: QueryDefinition, after: QueryDefinition): BreakingChange[] {
  const changes: BreakingChange[] = [];
  const narrowed = (a: SchemaNode | undefined, b: SchemaNode | undefined) => {
    const ta = types(a);
    const tb = types(b);
    if (tb.has('any')) return false;
    if (ta.has('any')) return true;
    if ([...ta].some((t) => !tb.has(t) && !(t === 'integer' && tb.has('number')))) return true;
    if (b?.enum && (!a?.enum || a.enum.some((v) => !b.enum!.some((w) => JSON.stringify(w) === JSON.stringify(v))))) return true;
    return false;
  };
  const outBefore = (before.outputSchema.properties ?? {}) as Record<string, SchemaNode>;
  const outAfter = (after.outputSchema.properties ?? {}) as Record<string, SchemaNode>;
  for (const [name, schema] of Object.entries(outBefore)) {
    if (!(name in outAfter)) changes.push({ kind: 'output_field_removed', path: `/outputSchema/properties/${name}`, message: `output field ${name} is removed` });
    else if (JSON.stringify([...types(schema)].sort()) !== JSON.stringify([...types(outAfter[name])].sort())) {
      changes.push({ kind: 'output_type_changed', path: `/outputSchema/properties/${name}/type`, message: `output field ${name} changes type from ${[...types(schema)].join('|')} to ${[...types(outAfter[name])].join('|')}` });
    }
  }
  const inBefore = (before.inputSchema.properties ?? {}) as Record<string, SchemaNode>;
  const inAfter = (after.inputSchema.properties ?? {}) as Record<string, SchemaNode>;
  const requiredBefore = new Set((before.inputSchema.required as string[] | undefined) ?? []);
  for (const name of (after.inputSchema.required as string[] | undefined) ?? []) {
    if (!requiredBefore.has(name)) changes.push({ kind: 'input_field_required', path: `/inputSchema/required`, message: `input field ${name} becomes required` });
  }
  for (const [name, schema] of Object.entries(inAfter)) {
    if (name in inBefore && narrowed(inBefore[name], schema)) changes.push({ kind: 'type_narrowed', path: `/inputSchema/properties/${name}`, message: `input field ${name} accepts less than before` });
  }
  return changes;
}

/** The diff a release would publish, without publishing (also the workflow's diff step). */
export async function releaseDiff(db: Executor, queryId: string, queryVersionId: string): Promise<{ previous: number | null; breakingChanges: BreakingChange[] }> {
  const version = await QueryVersion.query(db).findOne({ id: queryVersionId, queryId });
  if (!version) throw new NotFoundError('query_version', 'No version with this id of this query.');
  const previous = await QueryRelease.query(db).where({ queryId }).orderBy('version', 'desc').first();
  if (!previous) return { previous: null, breakingChanges: [] };
  const before = (await QueryVersion.query(db).findById(previous.queryVersionId))!;
  return { previous: previous.version, breakingChanges: contractChanges(before.definition, version.definition) };
}

export interface PublishInput {
  expectedQueryVersionId: string;
  acknowledgeBreakingChanges?: boolean;
}

/** Checks a publish request before the workflow runs: the expected version is the current one. */
export async function checkPublish(db: Executor, principal: Principal, project: Project, queryId: string, input: PublishInput) {
  const query = await requireQuery(db, project, queryId);
  if (principal.memberRole === undefined) throw new PermissionError('actor_not_accountable', 'Publishing needs an accountable member.');
  if (query.currentVersionId !== input.expectedQueryVersionId) {
    throw new ConflictError('query_version_stale', `The query has changed: its current version is ${query.currentVersionId}, not ${input.expectedQueryVersionId}. Review it and publish the current version.`, { currentQueryVersionId: query.currentVersionId });
  }
  return query;
}

/** The workflow's activate step: the next numeric release of the expected version, in one transaction. */
export async function activateRelease(db: Db, args: { queryId: string; queryVersionId: string; memberId: string; acknowledge: boolean; workflowId: string }): Promise<ReturnType<typeof presentRelease>> {
  return db.transaction(async (trx) => {
    const query = await PublishedQuery.query(trx).findById(args.queryId).forUpdate();
    if (!query) throw new NotFoundError('query', 'The query was deleted.');
    const done = await QueryRelease.query(trx).findOne({ queryId: args.queryId, workflowId: args.workflowId });
    if (done) return presentRelease(done);
    if (query.currentVersionId !== args.queryVersionId) throw new ConflictError('query_version_stale', `The query changed while publishing: its current version is ${query.currentVersionId}.`, { currentQueryVersionId: query.currentVersionId });
    const { breakingChanges } = await releaseDiff(trx, args.queryId, args.queryVersionId);
    if (breakingChanges.length && !args.acknowledge) {
      throw new ConflictError('breaking_changes', `This release breaks consumers: ${breakingChanges.map((c) => c.message).join('; ')}. Publish again with acknowledgeBreakingChanges true to accept.`, { breakingChanges });
    }
    const last = await QueryRelease.query(trx).where({ queryId: args.queryId }).max('version as max').first() as unknown as { max: number | null };
    const release = await QueryRelease.query(trx).insertAndFetch({ queryId: args.queryId, version: (last?.max ?? 0) + 1, queryVersionId: args.queryVersionId, status: 'published', breakingChanges, publishedByMemberId: args.memberId, workflowId: args.workflowId });
    return presentRelease(release);
  });
}

export async function retireRelease(db: Executor, project: Project, queryId: string, version: number) {
  await requireQuery(db, project, queryId);
  const release = await QueryRelease.query(db).findOne({ queryId, version }).forUpdate();
  if (!release) throw new NotFoundError('release', `The query has no release ${version}.`);
  if (release.status === 'retired') return presentRelease(release);
  return presentRelease(await release.$query(db).patchAndFetch({ status: 'retired', retiredAt: new Date() }));
}

// ---- Execution ----

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

function checkGrants(principal: Principal, version: QueryVersion): void {
  const missing = missingReadPermissions(principal, version.requiredReadPermissions);
  if (missing.length) throw new PermissionError('read_grant_required', `Executing this query needs the named read grants of its bindings: ${missing.join(', ')}. queries:execute alone does not grant them.`, { missingReadPermissions: missing });
}

const inputHash = (input: Record<string, unknown>) => createHash('sha256').update(canonicalJson(input)).digest('hex');

/** Runs a release's query for a caller: contract-checked input, grants-filtered dataset, contract-checked rows. */
async function runQuery(deps: Deps, principal: Principal, project: Project, version: QueryVersion, input: Record<string, unknown>, page: { limit: number; offset: number }, timeoutMs: number) {
  const dataset = await sparqlDataset(deps.db, principal, deps.encryptionKey, project);
  const { facts } = analyzeTemplate(version.definition.sparql, dataset.pkg.baseIri);
  if (!facts) throw new ConflictError('query_outdated', 'The released query no longer parses against the active ontology.');
  const text = bindTemplate(facts, input, version.definition.inputSchema as never, page);
  const result = await evaluateQuery(dataset.store, text, { timeoutMs, maxResults: EXECUTION_DEFAULTS.maxRows });
  if (result.kind !== 'bindings') throw new ConflictError('query_outdated', 'The released query does not return rows.');
  const rows = result.rows.map((row) => Object.fromEntries(facts.projected.map((name) => [name, jsonValue(row[name])])));
  rows.forEach((row, index) => {
    const problems = schemaProblems(version.definition.outputSchema, row);
    if (problems.length) {
      throw new ConflictError('output_contract_violated', `Row ${index} does not fit the release's output contract: ${summarizeProblems(problems)}. The bound data changed; the query needs a new release.`, { row: index, errors: problems });
    }
  });
  return rows;
}

async function recordExecution(db: Executor, principal: Principal, project: Project, resolved: Resolved, fields: Partial<QueryExecution>) {
  const execution = await QueryExecution.query(db).insert({ workspaceId: project.workspaceId, projectId: project.id, queryId: resolved.query.id, releaseVersion: resolved.release.version, apiKeyId: principal.apiKeyId, memberId: principal.memberId, mode: 'sync', status: 'succeeded', ...fields, inputHash: fields.inputHash! });
  if (execution.status === 'succeeded') {
    await meter(db, { workspaceId: project.workspaceId, projectId: project.id, kind: 'query_execution', ref: execution.id, actor: principal, quantities: { execution: 1, row: execution.rowCount ?? 0 } });
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
export async function executeQuery(deps: Deps, principal: Principal, project: Project, queryId: string, body: ExecuteBody, params: { version?: number; cursor?: string }) {
  if (params.cursor) return continueJob(deps.db, principal, project, queryId, params.cursor, body.options?.limit);
  const resolved = await resolveRelease(deps.db, project, queryId, params.version);
  checkGrants(principal, resolved.version);
  await assertCredit(deps.db, project.workspaceId, 'query_execution');
  const input = body.input ?? {};
  const problems = schemaProblems(resolved.version.definition.inputSchema, input, { prefix: '/input' });
  if (problems.length) throw new InputError('input_invalid', `The input does not fit release ${resolved.release.version}'s input contract: ${summarizeProblems(problems)}`, problems);
  const page = { limit: Math.min(body.options?.limit ?? EXECUTION_DEFAULTS.limit, EXECUTION_DEFAULTS.maxLimit), offset: body.options?.offset ?? 0 };
  const hash = inputHash(input);
  const started = Date.now();
  try {
    const rows = await runQuery(deps, principal, project, resolved.version, input, page, EXECUTION_DEFAULTS.syncBudgetMs);
    await recordExecution(deps.db, principal, project, resolved, { inputHash: hash, durationMs: Date.now() - started, rowCount: rows.length });
    return { status: 200, body: { status: 'succeeded', data: rows, metadata: { queryId, release: resolved.release.version, queryVersionId: resolved.version.id, rowCount: rows.length, limit: page.limit, offset: page.offset, durationMs: Date.now() - started } } };
  } catch (error) {
    if (!(error instanceof DomainError) || error.code !== 'query_timeout') {
      await recordExecution(deps.db, principal, project, resolved, { inputHash: hash, durationMs: Date.now() - started, status: 'failed' });
      throw error;
    }
  }
  // Over the budget: the rest runs as a job.
  const job = await QueryJob.query(deps.db).insertAndFetch({
    workspaceId: project.workspaceId,
    projectId: project.id,
    queryId,
    releaseVersion: resolved.release.version,
    apiKeyId: principal.apiKeyId,
    memberId: principal.memberId,
    status: 'active',
    input: { input, page },
    inputHash: hash,
    workflowId: 'pending',
    expiresAt: new Date(Date.now() + EXECUTION_DEFAULTS.jobTimeoutMs + EXECUTION_DEFAULTS.resultsTtlMs),
  });
  const workflowId = queryJobWorkflowId(job.id);
  await job.$query(deps.db).patch({ workflowId });
  await deps.temporal.workflow.start('queryJobWorkflow', { workflowId, taskQueue: temporalSettings().taskQueues.main, args: [{ jobId: job.id }] });
  await recordExecution(deps.db, principal, project, resolved, { inputHash: hash, mode: 'async', status: 'pending', jobId: job.id });
  return { status: 202, body: pendingBody(job, 0) };
}

function pendingBody(job: QueryJob, offset: number) {
  return { status: 'pending', data: [], metadata: { queryId: job.queryId, release: job.releaseVersion, job: { id: job.id, status: job.status, expiresAt: job.expiresAt.toISOString() }, continuation: sealJobCursor(job.id, offset) } };
}

/** The continuation flow: a page of a finished job's rows, or 202 while it runs; 410 once expired. */
async function continueJob(db: Executor, principal: Principal, project: Project, queryId: string, cursor: string, limit?: number) {
  const { job: jobId, offset } = openJobCursor(cursor);
  const job = await QueryJob.query(db).findOne({ id: jobId, queryId, projectId: project.id, workspaceId: project.workspaceId, apiKeyId: principal.apiKeyId });
  if (!job) throw new NotFoundError('query_job', 'No result job of yours for this query with this cursor.');
  if (job.status === 'expired' || job.expiresAt.getTime() <= Date.now()) {
    if (job.status !== 'expired') await job.$query(db).patch({ status: 'expired', rows: null });
    throw new GoneError('results_expired', 'The results of this job have expired; execute the query again.', { jobId: job.id });
  }
  if (job.status === 'active') return { status: 202, body: pendingBody(job, offset) };
  if (job.status === 'canceled') throw new ConflictError('job_canceled', 'This job was canceled; execute the query again.', { jobId: job.id });
  if (job.status === 'failed') throw restoredError(job.error as StoredError);
  const size = Math.min(limit ?? EXECUTION_DEFAULTS.limit, EXECUTION_DEFAULTS.maxLimit);
  const rows = (job.rows ?? []).slice(offset, offset + size);
  const next = offset + rows.length < (job.rowCount ?? 0) ? sealJobCursor(job.id, offset + rows.length) : null;
  return { status: 200, body: { status: 'succeeded', data: rows, metadata: { queryId, release: job.releaseVersion, job: { id: job.id, status: job.status, expiresAt: job.expiresAt.toISOString() }, rowCount: rows.length, totalRows: job.rowCount, offset, continuation: next } } };
}

/** DELETE of the job route: the caller's own active job (same key, workspace, project and query) is canceled. */
export async function cancelJob(db: Executor, temporal: Client, principal: Principal, project: Project, queryId: string, jobId: string) {
  const job = await QueryJob.query(db).findOne({ id: jobId, queryId, projectId: project.id, workspaceId: project.workspaceId });
  if (!job || job.apiKeyId !== principal.apiKeyId) throw new NotFoundError('query_job', 'No result job of this API key with this id for this query.');
  if (job.status === 'expired' || job.expiresAt.getTime() <= Date.now()) throw new GoneError('results_expired', 'This job has expired.', { jobId });
  if (job.status !== 'active') throw new ConflictError('job_not_active', `The job is ${job.status}, so it cannot be canceled.`, { status: job.status });
  await job.$query(db).patch({ status: 'canceled', finishedAt: new Date() });
  await temporal.workflow.getHandle(job.workflowId).cancel().catch(() => undefined);
  return { job: { id: job.id, status: 'canceled' } };
}

/** The job workflow's activity: runs the query with the job limit and stores the rows, unless the job was canceled meanwhile. */
export async function runQueryJob(deps: { db: Db; encryptionKey: Buffer }, jobId: string, principal: Principal): Promise<{ status: string }> {
  const job = await QueryJob.query(deps.db).findById(jobId);
  if (!job || job.status !== 'active') return { status: job?.status ?? 'missing' };
  const project = (await Project.query(deps.db).findById(job.projectId))!;
  const version = await QueryVersion.query(deps.db).join('query_releases', 'query_releases.query_version_id', 'query_versions.id').where({ 'query_releases.query_id': job.queryId, 'query_releases.version': job.releaseVersion }).select('query_versions.*').first();
  const { input, page } = job.input as { input: Record<string, unknown>; page: { limit: number; offset: number } };
  const started = Date.now();
  let rows: Array<Record<string, unknown>> | undefined;
  let failure: DomainError | undefined;
  try {
    // The key's grants as they are now, not as they were when the job was accepted.
    checkGrants(principal, version!);
    rows = await runQuery({ ...deps, temporal: undefined as never }, principal, project, version!, input, page, EXECUTION_DEFAULTS.jobTimeoutMs);
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    failure = error;
  }
  // Only an active job takes its outcome: a cancel that came first wins.
  const updated = await QueryJob.query(deps.db).patch({
    status: failure ? 'failed' : 'completed',
    rows: rows ?? null,
    rowCount: rows?.length ?? null,
    error: failure ? { kind: failure.kind, code: failure.code, message: failure.message, details: failure.details } : null,
    finishedAt: new Date(),
    expiresAt: new Date(Date.now() + EXECUTION_DEFAULTS.resultsTtlMs),
  }).where({ id: jobId, status: 'active' });
  await QueryExecution.query(deps.db).patch({ status: failure ? 'failed' : 'succeeded', durationMs: Date.now() - started, rowCount: rows?.length ?? null }).where({ jobId });
  // Keyed by the job: a retried activity meters it once.
  if (updated && !failure) await meter(deps.db, { workspaceId: job.workspaceId, projectId: job.projectId, kind: 'query_execution', ref: job.id, actor: { memberId: job.memberId, apiKeyId: job.apiKeyId }, quantities: { execution: 1, row: rows!.length } });
  return { status: updated ? (failure ? 'failed' : 'completed') : 'canceled' };
}

/** A job whose key may no longer run it (revoked, expired, restricted, its member gone) fails with the reason recorded. */
export async function refuseQueryJob(db: Db, jobId: string, refusal: DomainError): Promise<{ status: string }> {
  const updated = await QueryJob.query(db).patch({
    status: 'failed',
    error: { kind: refusal.kind, code: refusal.code, message: refusal.message, details: refusal.details },
    finishedAt: new Date(),
    expiresAt: new Date(Date.now() + EXECUTION_DEFAULTS.resultsTtlMs),
  }).where({ id: jobId, status: 'active' });
  await QueryExecution.query(db).patch({ status: 'failed' }).where({ jobId });
  return { status: updated ? 'failed' : 'canceled' };
}

export async function listExecutions(db: Executor, principal: Principal, page: PageRequest, filter: { queryId?: string; projectId?: string; executionId?: string }) {
  const base = QueryExecution.query(db).where({ workspaceId: principal.workspaceId });
  if (filter.executionId) base.where('id', filter.executionId);
  if (filter.queryId) base.where('queryId', filter.queryId);
  if (filter.projectId) base.where('projectId', filter.projectId);
  if (principal.projectIds.length) base.whereIn('projectId', principal.projectIds as string[]);
  const { rows, pagination } = await pageOf(base, page, { column: 'createdAt', order: 'desc' });
  return {
    queryExecutions: rows.map((e) => ({ id: e.id, projectId: e.projectId, queryId: e.queryId, release: e.releaseVersion, apiKeyId: e.apiKeyId, memberId: e.memberId, inputHash: e.inputHash, mode: e.mode, status: e.status, durationMs: e.durationMs, rowCount: e.rowCount, jobId: e.jobId, createdAt: e.createdAt.toISOString() })),
    pagination,
  };
}

/** The workflow's validate step: the version still compiles against the active ontology and its bindings. */
export async function checkReleaseVersion(db: Db, queryId: string, queryVersionId: string): Promise<{ ok: true }> {
  const query = await PublishedQuery.query(db).findById(queryId);
  const version = await QueryVersion.query(db).findOne({ id: queryVersionId, queryId });
  if (!query || !version) throw new NotFoundError('query_version', 'The query or its version was deleted.');
  const project = (await Project.query(db).findById(query.projectId))!;
  await validateDefinition(db, project, { name: query.name, ...version.definition });
  return { ok: true };
}

/**
 * POST releases: a Temporal workflow validates, diffs and activates; the request waits for it.
 * A breaking change without acknowledgement, or a stale expected version, fails with 409.
 */
export async function publishRelease(deps: Deps, principal: Principal, project: Project, queryId: string, input: PublishInput, requestId: string) {
  await checkPublish(deps.db, principal, project, queryId, input);
  const workflowId = releaseWorkflowId(queryId, input.expectedQueryVersionId, requestId);
  try {
    return (await deps.temporal.workflow.execute('publishReleaseWorkflow', {
      workflowId,
      taskQueue: temporalSettings().taskQueues.main,
      args: [{ queryId, queryVersionId: input.expectedQueryVersionId, memberId: principal.memberId, acknowledge: input.acknowledgeBreakingChanges === true }],
    })) as ReturnType<typeof presentRelease>;
  } catch (error) {
    const cause = (error as { cause?: { cause?: unknown } }).cause?.cause ?? (error as { cause?: unknown }).cause;
    if (cause instanceof ApplicationFailure && cause.type) {
      const evidence = cause.details?.[0] as { details?: Record<string, unknown> } | undefined;
      throw restoredError({ kind: cause.type === 'not_found' ? 'not_found' : 'conflict', code: cause.type, message: cause.message, details: evidence?.details });
    }
    throw error;
  }
}
