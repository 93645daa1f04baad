import { raw } from 'objection';
import { ConflictError, FieldProblem, InputError, NotFoundError } from '../../core/errors';
import { schemaProblems, summarizeProblems } from '../../core/schema-validator';
import type { Executor } from '../../db/connection';
import { DataEndpoint, Pipeline, PipelineBranch, PipelineDraft, PipelineSchedule, PipelineVersion, Project } from '../../db/models';
import { findCapability } from '../../plugins';
import { DestinationNode, documentEndpointIds, isDestination, isSource, PipelineDocument, pipelineDocumentSchema } from '../../pipelines/document';
import { documentProblems, EndpointFacts, PipelineProblem } from '../../pipelines/validation';
import type { Principal } from '../tenancy/access';
import type { EndpointReferenceFinder } from '../endpoints/data-endpoints';
import { guardEndpointsData } from '../endpoints/data-guard';
import { PageRequest, pageOf } from '../shared/pagination';
import type { OperationContext, ServiceDependencies } from '../operations/context';
import { presentBranch, presentDraft, presentPipeline, presentVersion, type PipelineVersionView, type PipelineView } from './presenters';

export const MAIN_BRANCH = 'main';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface PipelineInput {
  /** Optional: "Untitled pipeline", numbered when taken. */
  name?: string;
  description?: string;
  tags?: string[];
  document: PipelineDocument;
  workspaceState?: Record<string, unknown>;
  commitMessage?: string;
}

export interface CommitInput {
  document: PipelineDocument;
  branchName?: string;
  commitMessage?: string;
}

/**
 * A pipeline of this project (another project's or workspace's is a 404), locked for changes when
 * asked. A lookup, so (db, project, …): it runs on whatever executor the caller holds.
 */
export async function requirePipeline(db: Executor, project: Project, pipelineId: string, forUpdate = false): Promise<Pipeline> {
  const query = Pipeline.query(db).findOne({ id: pipelineId, projectId: project.id, workspaceId: project.workspaceId });
  const pipeline = await (forUpdate ? query.forUpdate() : query);
  if (!pipeline) throw new NotFoundError('pipeline', 'No pipeline with this id in this project.');
  return pipeline;
}

async function activeVersionOf(db: Executor, pipeline: Pipeline): Promise<PipelineVersion | undefined> {
  return pipeline.activeVersionId ? PipelineVersion.query(db).findById(pipeline.activeVersionId) : undefined;
}

async function viewOf(db: Executor, pipeline: Pipeline): Promise<PipelineView> {
  return presentPipeline(pipeline, await activeVersionOf(db, pipeline));
}

/** What validation knows of the endpoints a document names, loaded from this workspace only. */
async function endpointFacts(db: Executor, workspaceId: string, document: PipelineDocument): Promise<Map<string, EndpointFacts>> {
  const ids = documentEndpointIds(document);
  if (!ids.length) return new Map();
  const endpoints = await DataEndpoint.query(db).withGraphJoined('installation', { joinOperation: 'innerJoin' })
    .where('data_endpoints.workspaceId', workspaceId).whereIn('data_endpoints.id', ids);
  return new Map(endpoints.map((endpoint): [string, EndpointFacts] => {
    const runtime = findCapability(endpoint.installation!.capability, endpoint.installation!.capabilityVersion);
    const declaredKey = endpoint.target.primaryKey ?? endpoint.target.primaryKeys;
    return [endpoint.id, {
      id: endpoint.id,
      role: endpoint.role,
      capability: runtime.definition,
      target: endpoint.target,
      fields: endpoint.schemaHints?.columns?.length ? endpoint.schemaHints.columns.map((c) => c.name) : null,
      primaryKey: endpoint.schemaHints?.primaryKey ?? (Array.isArray(declaredKey) ? (declaredKey as string[]) : null),
      stagedWrites: typeof runtime.commitStagedWrite === 'function',
    }];
  }));
}

/** Every problem of a document against this workspace's endpoints; [] when it can be committed and run. */
export async function pipelineDocumentProblems(db: Executor, workspaceId: string, document: PipelineDocument): Promise<PipelineProblem[]> {
  return documentProblems(document, await endpointFacts(db, workspaceId, document));
}

/** Refuses a document with problems, listing all of them (each with its node id) in one error. */
export async function assertRunnableDocument(db: Executor, workspaceId: string, document: PipelineDocument, prefix = '/document'): Promise<void> {
  const problems = await pipelineDocumentProblems(db, workspaceId, document);
  if (problems.length) {
    const located = problems.map((p) => ({ ...p, path: `${prefix}${p.path}` }));
    throw new InputError('pipeline_invalid', `The pipeline document has ${problems.length} problem${problems.length > 1 ? 's' : ''}: ${summarizeProblems(located)}`, located);
  }
}

/**
 * The data guard for a pipeline's endpoints: its sources are read and its destinations written in
 * the project, as this key (a destination over data with a write policy only as that policy lets runs). Asked when a document is authored, validated, previewed and launched,
 * and when a run commits; endpoints the document names wrongly are validation problems instead.
 * A data-guard primitive like guardEndpointsData, so it takes the executor and the key at hand:
 * a run's launcher, on the run's transaction, when the run commits.
 */
export async function guardPipelineData(deps: Pick<ServiceDependencies, 'definitions'>, db: Executor, principal: Principal, projectId: string, document: PipelineDocument): Promise<void> {
  const nodes = (Array.isArray(document.nodes) ? document.nodes : []).filter((node) => (isSource(node) || isDestination(node)) && typeof node.endpointId === 'string' && UUID.test(node.endpointId));
  if (nodes.length === 0) return;
  const endpoints = new Map((await DataEndpoint.query(db).where({ workspaceId: principal.workspaceId }).whereIn('id', nodes.map((node) => (node as { endpointId: string }).endpointId))).map((e) => [e.id, e]));
  const uses = nodes.flatMap((node) => {
    const endpoint = endpoints.get((node as { endpointId: string }).endpointId);
    if (!endpoint) return [];
    return [isSource(node)
      ? { endpoint, channel: 'pipeline' as const, mode: 'read' as const, projectId }
      : { endpoint, channel: 'pipeline' as const, mode: 'write' as const, writeMode: (node as DestinationNode).writeMode ?? 'append', projectId }];
  });
  await guardEndpointsData(deps, db, principal, uses);
}

/** "Untitled pipeline", or the first free "Untitled pipeline N" of the project. */
async function untitledName(db: Executor, projectId: string): Promise<string> {
  const base = 'Untitled pipeline';
  const taken = new Set((await Pipeline.query(db).where({ projectId }).where('name', 'like', `${base}%`).select('name')).map((p) => p.name));
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) if (!taken.has(`${base} ${n}`)) return `${base} ${n}`;
}

async function assertNameFree(db: Executor, projectId: string, name: string, exceptId?: string): Promise<void> {
  const query = Pipeline.query(db).findOne({ projectId, name });
  if (exceptId) query.whereNot('id', exceptId);
  if (await query) throw new ConflictError('pipeline_name_taken', `A pipeline named "${name}" already exists in this project.`);
}

/** Inserts a validated version at the head of a branch: numbers are sequential per pipeline (the pipeline row is locked). */
async function insertVersion(ctx: OperationContext, pipeline: Pipeline, input: CommitInput, branch: PipelineBranch | undefined): Promise<PipelineVersion> {
  const { db, principal } = ctx;
  const { max } = (await PipelineVersion.query(db).where({ pipelineId: pipeline.id }).max('number as max').first()) as unknown as { max: number | null };
  const version = await PipelineVersion.query(db).insertAndFetch({
    pipelineId: pipeline.id,
    workspaceId: pipeline.workspaceId,
    number: (max ?? 0) + 1,
    branchName: input.branchName ?? MAIN_BRANCH,
    parentVersionId: branch?.headVersionId ?? null,
    document: input.document as unknown as Record<string, unknown>,
    endpointIds: documentEndpointIds(input.document),
    commitMessage: input.commitMessage ?? null,
    createdByMemberId: principal.memberId,
  });
  if (branch) await branch.$query(db).patch({ headVersionId: version.id, updatedAt: raw('now()') as unknown as Date });
  return version;
}

async function saveDraftRow(ctx: OperationContext, pipeline: Pipeline, input: { document: PipelineDocument; workspaceState?: Record<string, unknown> | null; basedOnVersionId: string | null }): Promise<PipelineDraft> {
  const { db, principal } = ctx;
  const row = {
    pipelineId: pipeline.id,
    memberId: principal.memberId,
    workspaceId: pipeline.workspaceId,
    document: JSON.stringify(input.document),
    workspaceState: input.workspaceState === undefined || input.workspaceState === null ? null : JSON.stringify(input.workspaceState),
    basedOnVersionId: input.basedOnVersionId,
    // An unfinished draft may name anything as an endpoint: only real ids are tracked.
    endpointIds: documentEndpointIds(input.document).filter((id) => typeof id === 'string' && UUID.test(id)),
    updatedAt: db.fn.now(),
  };
  await db('pipelineDrafts').insert(row).onConflict(['pipelineId', 'memberId']).merge();
  return (await PipelineDraft.query(db).findById([pipeline.id, principal.memberId]))!;
}

/** Creates a pipeline with its first version (active, on branch main) and the caller's draft. Launches nothing. */
export async function createPipeline(ctx: OperationContext, input: PipelineInput) {
  const { db, principal, project } = ctx;
  await assertRunnableDocument(db, principal.workspaceId, input.document);
  await guardPipelineData(ctx.deps, db, principal, project.id, input.document);
  const name = input.name ?? (await untitledName(db, project.id));
  await assertNameFree(db, project.id, name);
  const pipeline = await Pipeline.query(db).insertAndFetch({
    workspaceId: project.workspaceId,
    projectId: project.id,
    name,
    description: input.description ?? '',
    tags: input.tags ?? [],
    createdByMemberId: principal.memberId,
  });
  const version = await insertVersion(ctx, pipeline, { document: input.document, commitMessage: input.commitMessage ?? 'Initial version' }, undefined);
  await PipelineBranch.query(db).insert({ pipelineId: pipeline.id, name: MAIN_BRANCH, headVersionId: version.id, createdByMemberId: principal.memberId });
  const active = await pipeline.$query(db).patchAndFetch({ activeVersionId: version.id });
  const draft = await saveDraftRow(ctx, pipeline, { document: input.document, workspaceState: input.workspaceState, basedOnVersionId: version.id });
  return { pipeline: presentPipeline(active, version), version: presentVersion(version), draft: presentDraft(draft) };
}

export async function getPipeline(ctx: OperationContext, pipelineId: string): Promise<PipelineView> {
  const { db, project } = ctx;
  return viewOf(db, await requirePipeline(db, project, pipelineId));
}

export async function listPipelines(ctx: OperationContext, page: PageRequest, filter: { name?: string; tag?: string }) {
  const { db, project } = ctx;
  const base = Pipeline.query(db).where({ projectId: project.id, workspaceId: project.workspaceId });
  if (filter.name) base.where('name', filter.name);
  if (filter.tag) base.whereRaw('? = ANY(tags)', [filter.tag]);
  const { rows, pagination } = await pageOf(base, page);
  const versionIds = rows.map((r) => r.activeVersionId).filter((id): id is string => Boolean(id));
  const versions = versionIds.length ? await PipelineVersion.query(db).whereIn('id', versionIds) : [];
  const byId = new Map(versions.map((v) => [v.id, v]));
  return { pipelines: rows.map((r) => presentPipeline(r, r.activeVersionId ? byId.get(r.activeVersionId) : undefined)), pagination };
}

/** The caller's draft, or (before the caller saved one) a draft that starts from the active version. */
export async function getDraft(ctx: OperationContext, pipelineId: string) {
  const { db, principal, project } = ctx;
  const pipeline = await requirePipeline(db, project, pipelineId);
  const draft = await PipelineDraft.query(db).findById([pipeline.id, principal.memberId]);
  if (draft) return presentDraft(draft);
  const active = await activeVersionOf(db, pipeline);
  return presentDraft(PipelineDraft.fromJson({
    pipelineId: pipeline.id, memberId: principal.memberId, workspaceId: pipeline.workspaceId, document: active?.document ?? { nodes: [], edges: [] },
    workspaceState: null, basedOnVersionId: active?.id ?? null, endpointIds: [],
  }, { skipValidation: true }), false);
}

/** Replaces the caller's draft. Drafts may be incomplete: they are checked on validate and on commit, and the active version is unchanged. */
export async function saveDraft(ctx: OperationContext, pipelineId: string, input: { document: PipelineDocument; workspaceState?: Record<string, unknown>; basedOnVersionId?: string }) {
  const { db, project } = ctx;
  // The lock orders this check against commits and activations of the same pipeline.
  const pipeline = await requirePipeline(db, project, pipelineId, Boolean(input.basedOnVersionId));
  let basedOn = pipeline.activeVersionId;
  if (input.basedOnVersionId) basedOn = await assertCurrentBase(db, pipeline, input.basedOnVersionId);
  return presentDraft(await saveDraftRow(ctx, pipeline, { document: input.document, workspaceState: input.workspaceState, basedOnVersionId: basedOn }));
}

/**
 * A draft says which version its edits started from (MCP pipeline_draft_save's basedOnVersionId).
 * That base is current while it is the active version or the head of a branch; once a newer
 * version replaced it, saving would silently drop that version's changes, so it is a conflict.
 */
async function assertCurrentBase(db: Executor, pipeline: Pipeline, basedOnVersionId: string): Promise<string> {
  const version = await requireVersion(db, pipeline, basedOnVersionId);
  const heads = await PipelineBranch.query(db).where({ pipelineId: pipeline.id });
  if (version.id === pipeline.activeVersionId || heads.some((b) => b.headVersionId === version.id)) return version.id;
  throw new ConflictError('stale_draft_base', 'The draft is based on a version that a newer version has replaced. Read the pipeline again and reapply your edits to its current version.', {
    basedOnVersionId: version.id,
    activeVersionId: pipeline.activeVersionId,
    branchHeads: Object.fromEntries(heads.map((b) => [b.name, b.headVersionId])),
  });
}

export async function validateDraft(ctx: OperationContext, pipelineId: string): Promise<{ valid: boolean; problems: PipelineProblem[] }> {
  const { db, principal, project } = ctx;
  const draft = await getDraft(ctx, pipelineId);
  // An unfinished draft first answers to the document schema; the graph rules need a complete one.
  const shape = schemaProblems(pipelineDocumentSchema, structuredClone(draft.document));
  const problems = shape.length ? shape.map((p) => withNodeId(p, draft.document)) : await pipelineDocumentProblems(db, principal.workspaceId, draft.document as unknown as PipelineDocument);
  if (!shape.length) await guardPipelineData(ctx.deps, db, principal, project.id, draft.document as unknown as PipelineDocument);
  return { valid: problems.length === 0, problems };
}

/** Names the node a schema problem under /nodes/{i} concerns. */
function withNodeId(problem: FieldProblem, document: Record<string, unknown>): PipelineProblem {
  const index = /^\/nodes\/(\d+)/.exec(problem.path)?.[1];
  const node = index === undefined ? undefined : (document.nodes as Array<{ id?: unknown }> | undefined)?.[Number(index)];
  return typeof node?.id === 'string' ? { ...problem, nodeId: node.id } : problem;
}

async function requireVersion(db: Executor, pipeline: Pipeline, versionId: string): Promise<PipelineVersion> {
  const version = await PipelineVersion.query(db).findOne({ id: versionId, pipelineId: pipeline.id });
  if (!version) throw new NotFoundError('pipeline_version', 'No version with this id in this pipeline.');
  return version;
}

async function requireBranch(db: Executor, pipeline: Pipeline, name: string): Promise<PipelineBranch> {
  const branch = await PipelineBranch.query(db).findById([pipeline.id, name]).forUpdate();
  if (!branch) {
    throw new InputError('unknown_branch', `The pipeline has no branch "${name}". Create it first (POST …/branches).`, [{ path: '/branchName', message: 'names no branch of this pipeline' }]);
  }
  return branch;
}

/** Commits a document as a new version on a branch (default main). The active version is unchanged. */
export async function commitVersion(ctx: OperationContext, pipelineId: string, input: CommitInput): Promise<PipelineVersionView> {
  const { db, principal, project } = ctx;
  const pipeline = await requirePipeline(db, project, pipelineId, true);
  const branch = await requireBranch(db, pipeline, input.branchName ?? MAIN_BRANCH);
  await assertRunnableDocument(db, principal.workspaceId, input.document);
  await guardPipelineData(ctx.deps, db, principal, project.id, input.document);
  return presentVersion(await insertVersion(ctx, pipeline, input, branch));
}

/** PUT: commits the document as a new version and makes it the active one. */
export async function replaceDocument(ctx: OperationContext, pipelineId: string, input: CommitInput) {
  const { db, project } = ctx;
  const version = await commitVersion(ctx, pipelineId, input);
  const pipeline = await requirePipeline(db, project, pipelineId, true);
  const updated = await pipeline.$query(db).patchAndFetch({ activeVersionId: version.id, updatedAt: raw('now()') as unknown as Date });
  return { pipeline: await viewOf(db, updated), version };
}

export async function listVersions(ctx: OperationContext, pipelineId: string, page: PageRequest, filter: { versionId?: string; branchName?: string }) {
  const { db, project } = ctx;
  const pipeline = await requirePipeline(db, project, pipelineId);
  const base = PipelineVersion.query(db).where({ pipelineId: pipeline.id });
  if (filter.versionId) base.where('id', filter.versionId);
  if (filter.branchName) base.where('branchName', filter.branchName);
  const { rows, pagination } = await pageOf(base, page, { column: 'number', order: 'desc' });
  if (filter.versionId && !rows.length) throw new NotFoundError('pipeline_version', 'No version with this id in this pipeline.');
  return { versions: rows.map(presentVersion), pagination };
}

/** Makes a committed version the one launches run. A body versionId must match the path's. Launches nothing. */
export async function activateVersion(ctx: OperationContext, pipelineId: string, versionId: string, expectedVersionId?: string): Promise<PipelineView> {
  const { db, project } = ctx;
  if (expectedVersionId !== undefined && expectedVersionId !== versionId) {
    throw new ConflictError('version_mismatch', `The body names version ${expectedVersionId}, but the path activates ${versionId}.`);
  }
  const pipeline = await requirePipeline(db, project, pipelineId, true);
  const version = await requireVersion(db, pipeline, versionId);
  await assertRunnableDocument(db, project.workspaceId, version.document as unknown as PipelineDocument);
  return presentPipeline(await pipeline.$query(db).patchAndFetch({ activeVersionId: version.id, updatedAt: raw('now()') as unknown as Date }), version);
}

export async function createBranch(ctx: OperationContext, pipelineId: string, input: { name: string; sourceVersionId?: string }) {
  const { db, principal, project } = ctx;
  const pipeline = await requirePipeline(db, project, pipelineId, true);
  const sourceId = input.sourceVersionId ?? pipeline.activeVersionId;
  if (!sourceId) throw new InputError('source_version_required', 'The pipeline has no active version: name sourceVersionId.');
  const source = await requireVersion(db, pipeline, sourceId);
  if (await PipelineBranch.query(db).findById([pipeline.id, input.name])) throw new ConflictError('branch_exists', `The pipeline already has a branch "${input.name}".`);
  const branch = await PipelineBranch.query(db).insertAndFetch({ pipelineId: pipeline.id, name: input.name, headVersionId: source.id, createdByMemberId: principal.memberId });
  return presentBranch(branch);
}

export async function listBranches(ctx: OperationContext, pipelineId: string) {
  const { db, project } = ctx;
  const pipeline = await requirePipeline(db, project, pipelineId);
  return (await PipelineBranch.query(db).where({ pipelineId: pipeline.id }).orderBy('name')).map(presentBranch);
}

export async function updatePipelineSettings(ctx: OperationContext, pipelineId: string, patch: { name?: string; description?: string; tags?: string[] }): Promise<PipelineView> {
  const { db, project } = ctx;
  const pipeline = await requirePipeline(db, project, pipelineId, true);
  if (patch.name !== undefined) await assertNameFree(db, project.id, patch.name, pipeline.id);
  return viewOf(db, await pipeline.$query(db).patchAndFetch({ ...patch, updatedAt: raw('now()') as unknown as Date }));
}

/**
 * Removes the definition, its versions, branches, drafts, positions and schedules. Runs stay
 * readable (they keep their own snapshot). Temporal schedules are deleted first: a schedule left
 * behind would only launch nothing, but should not linger.
 */
export async function deletePipeline(ctx: OperationContext, pipelineId: string): Promise<void> {
  const { db, deps: { temporal }, project } = ctx;
  const pipeline = await requirePipeline(db, project, pipelineId, true);
  const schedules = await PipelineSchedule.query(db).where({ pipelineId: pipeline.id });
  for (const schedule of schedules) {
    await temporal.schedule.getHandle(schedule.temporalScheduleId).delete().catch(() => undefined);
  }
  await pipeline.$query(db).delete();
}

/** A pipeline that names an endpoint in any committed version blocks the endpoint's deletion. */
export const pipelinesNamingEndpoint: EndpointReferenceFinder = async (db, workspaceId, endpointId) => {
  const rows = await Pipeline.query(db).distinct('pipelines.id', 'pipelines.name')
    .join('pipelineVersions as v', 'v.pipelineId', 'pipelines.id')
    .where('pipelines.workspaceId', workspaceId)
    .whereRaw('v.endpoint_ids @> ARRAY[?]::uuid[]', [endpointId]);
  return rows.map((row) => ({ kind: 'pipeline', id: row.id, name: row.name }));
};
