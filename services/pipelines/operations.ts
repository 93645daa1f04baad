import type { PipelineDocument } from '../../pipelines/document';
import { defineOperation } from '../operations/operation';
import type { PageRequest } from '../shared/pagination';
import { previewPipeline } from './pipeline-preview';
import {
  activateVersion,
  CommitInput,
  commitVersion,
  createBranch,
  createPipeline,
  deletePipeline,
  getDraft,
  getPipeline,
  listBranches,
  listPipelines,
  listVersions,
  PipelineInput,
  replaceDocument,
  saveDraft,
  updatePipelineSettings,
  validateDraft,
} from './pipelines';
import { launchRun } from './runs';
import { idParams } from '../../schemas/common';
import { activateBody, commitVersionBody, createBranchBody, createPipelineBody, listPipelinesQuery, listVersionsQuery, pipelineParams, previewBody, saveDraftBody, updatePipelineBody } from '../../schemas/pipelines';

// The pipeline operations (SPEC 2.3): each declares its access once; HTTP routes and MCP tools
// invoke them (services/operations/invoke.ts).

const read = { scopes: { anyOf: ['pipelines:read'] }, project: true } as const;
/** Pipeline documents name endpoints: creating or committing one passes the data guard on each (named read grants). */
const write = { scopes: { anyOf: ['pipelines:write'] }, project: true, actor: 'accountable', grants: 'read and write' } as const;

type InProject = { projectId: string };
type OnePipeline = InProject & { pipelineId: string };

export const listPipelinesOperation = defineOperation({
  name: 'listPipelines',
  summary: 'List the project\'s pipelines, filtered by exact name or tag.',
  access: read,
  effect: 'read',
  input: { flat: true, params: idParams('project_id'), query: listPipelinesQuery },
  run: (ctx, { limit, offset, name, tag }: InProject & PageRequest & { name?: string; tag?: string }) => listPipelines(ctx, { limit, offset }, { name, tag }),
});

export const getPipelineOperation = defineOperation({
  name: 'getPipeline',
  summary: 'One pipeline, with its active version and document, and its branches with their head versions.',
  access: read,
  effect: 'read',
  input: { flat: true, params: pipelineParams },
  run: async (ctx, { pipelineId }: OnePipeline) => ({ pipeline: await getPipeline(ctx, pipelineId), branches: await listBranches(ctx, pipelineId) }),
});

export const createPipelineOperation = defineOperation({
  name: 'createPipeline',
  summary: 'Create a pipeline: its first version (active, on branch main) and your draft. Launches nothing.',
  access: write,
  effect: 'write',
  input: { flat: true, params: idParams('project_id'), body: createPipelineBody },
  idempotent: true,
  run: (ctx, { projectId: _projectId, ...input }: InProject & PipelineInput) => createPipeline(ctx, input),
});

export const getPipelineDraftOperation = defineOperation({
  name: 'getPipelineDraft',
  summary: 'Your own draft (one per accountable member); before you save one, a draft that starts from the active version.',
  access: read,
  effect: 'read',
  input: { flat: true, params: pipelineParams },
  run: async (ctx, { pipelineId }: OnePipeline) => ({ draft: await getDraft(ctx, pipelineId) }),
});

export const savePipelineDraftOperation = defineOperation({
  name: 'savePipelineDraft',
  summary: 'Replace your draft. It may be unfinished; the active version is unchanged.',
  access: write,
  effect: 'write',
  input: { flat: true, params: pipelineParams, body: saveDraftBody },
  idempotent: true,
  run: async (ctx, { pipelineId, document, workspaceState, basedOnVersionId }: OnePipeline & { document: PipelineDocument; workspaceState?: Record<string, unknown>; basedOnVersionId?: string }) => ({
    draft: await saveDraft(ctx, pipelineId, { document, workspaceState, basedOnVersionId }),
  }),
});

export const validatePipelineDraftOperation = defineOperation({
  name: 'validatePipelineDraft',
  summary: 'Validate your draft: the graph, endpoint references, roles, capability support and field compatibility, every problem at once.',
  access: { ...read, actor: 'accountable', grants: 'read and write' as const },
  effect: 'read',
  input: { flat: true, params: pipelineParams },
  run: (ctx, { pipelineId }: OnePipeline) => validateDraft(ctx, pipelineId),
});

export const commitPipelineVersionOperation = defineOperation({
  name: 'commitPipelineVersion',
  summary: 'Commit a document as a new version on a branch (default main). The active version is unchanged.',
  access: write,
  effect: 'write',
  input: { flat: true, params: pipelineParams, body: commitVersionBody },
  idempotent: true,
  run: async (ctx, { pipelineId, projectId: _projectId, ...input }: OnePipeline & CommitInput) => ({ version: await commitVersion(ctx, pipelineId, input) }),
});

export const listPipelineVersionsOperation = defineOperation({
  name: 'listPipelineVersions',
  summary: 'Committed versions, newest first; versionId selects one, branchName one branch.',
  access: read,
  effect: 'read',
  input: { flat: true, params: pipelineParams, query: listVersionsQuery },
  run: (ctx, { pipelineId, limit, offset, versionId, branchName }: OnePipeline & PageRequest & { versionId?: string; branchName?: string }) =>
    listVersions(ctx, pipelineId, { limit, offset }, { versionId, branchName }),
});

export const activatePipelineVersionOperation = defineOperation({
  name: 'activatePipelineVersion',
  summary: 'Make a committed version the one launches run. A body versionId that differs from the path is a 409.',
  access: write,
  effect: 'write',
  input: { flat: true, params: idParams('project_id', 'pipeline_id', 'version_id'), body: activateBody },
  run: async (ctx, input: OnePipeline & { versionId: string; expectedVersionId?: string }) => ({
    pipeline: await activateVersion(ctx, input.pipelineId, input.versionId, input.expectedVersionId),
  }),
});

export const createPipelineBranchOperation = defineOperation({
  name: 'createPipelineBranch',
  summary: 'Create a branch at a version (default the active one); commit to it with branchName.',
  access: write,
  effect: 'write',
  input: { flat: true, params: pipelineParams, body: createBranchBody },
  idempotent: true,
  run: async (ctx, { pipelineId, name, sourceVersionId }: OnePipeline & { name: string; sourceVersionId?: string }) => ({
    branch: await createBranch(ctx, pipelineId, { name, sourceVersionId }),
  }),
});

export const replacePipelineDocumentOperation = defineOperation({
  name: 'replacePipelineDocument',
  summary: 'Replace the document: commits it as a new version (on branchName, default main) and makes that version active.',
  access: write,
  effect: 'write',
  input: { flat: true, params: pipelineParams, body: commitVersionBody },
  run: (ctx, { pipelineId, projectId: _projectId, ...input }: OnePipeline & CommitInput) => replaceDocument(ctx, pipelineId, input),
});

export const updatePipelineSettingsOperation = defineOperation({
  name: 'updatePipelineSettings',
  summary: 'Change name, description or tags.',
  access: write,
  effect: 'write',
  input: { flat: true, params: pipelineParams, body: updatePipelineBody },
  run: async (ctx, { pipelineId, name, description, tags }: OnePipeline & { name?: string; description?: string; tags?: string[] }) => ({
    pipeline: await updatePipelineSettings(ctx, pipelineId, { name, description, tags }),
  }),
});

export const deletePipelineOperation = defineOperation({
  name: 'deletePipeline',
  summary: 'Delete the pipeline: definition, versions, branches, drafts, positions and schedules. Its runs stay readable.',
  access: write,
  effect: 'write',
  input: { flat: true, params: pipelineParams },
  idempotent: true,
  run: async (ctx, { pipelineId }: OnePipeline) => {
    await deletePipeline(ctx, pipelineId);
    return { deleted: true, pipelineId };
  },
});

export const executePipelineOperation = defineOperation({
  name: 'executePipeline',
  summary: 'Launch the active version. 202 with the run (queued behind an open run of this pipeline); poll it with runs:read.',
  access: { scopes: { anyOf: ['pipelines:execute'] }, project: true, actor: 'accountable', grants: 'read and write' as const },
  effect: 'write',
  input: { flat: true, params: pipelineParams },
  idempotent: true,
  run: async (ctx, { pipelineId }: OnePipeline) => ({ run: await launchRun(ctx, pipelineId) }),
});

export const previewPipelineOperation = defineOperation({
  name: 'previewPipeline',
  summary: 'Run your draft (or a version) on a sample of each source through the whole graph: every node\'s output. Nothing is written and no position moves.',
  // A preview reads source records: it needs data:read as well, and the data guard checks each source.
  access: { scopes: { allOf: ['pipelines:write', 'data:read'] }, project: true, actor: 'accountable', grants: 'read and write' as const },
  effect: 'external',
  input: { flat: true, params: pipelineParams, body: previewBody },
  run: async (ctx, { pipelineId, versionId, sampleSize }: OnePipeline & { versionId?: string; sampleSize?: number }) => ({
    preview: await previewPipeline(ctx, pipelineId, { versionId, sampleSize }),
  }),
});

export const pipelineOperations = [
  listPipelinesOperation,
  getPipelineOperation,
  createPipelineOperation,
  getPipelineDraftOperation,
  savePipelineDraftOperation,
  validatePipelineDraftOperation,
  commitPipelineVersionOperation,
  listPipelineVersionsOperation,
  activatePipelineVersionOperation,
  createPipelineBranchOperation,
  replacePipelineDocumentOperation,
  updatePipelineSettingsOperation,
  deletePipelineOperation,
  executePipelineOperation,
  previewPipelineOperation,
];
