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
  listPipelines,
  listVersions,
  PipelineInput,
  replaceDocument,
  saveDraft,
  updatePipelineSettings,
  validateDraft,
} from './pipelines';
import { launchRun } from './runs';

// The pipeline operations (SPEC 2.3): each declares its access once; HTTP routes and MCP tools
// invoke them (services/operations/invoke.ts).

const read = { scopes: { anyOf: ['pipelines:read'] }, project: true } as const;
const write = { scopes: { anyOf: ['pipelines:write'] }, project: true, actor: 'accountable' } as const;

type InProject = { projectId: string };
type OnePipeline = InProject & { pipelineId: string };

export const listPipelinesOperation = defineOperation({
  name: 'listPipelines',
  summary: 'List the project\'s pipelines, filtered by exact name or tag.',
  access: read,
  effect: 'read',
  run: ({ db, project }, { limit, offset, name, tag }: InProject & PageRequest & { name?: string; tag?: string }) => listPipelines(db, project, { limit, offset }, { name, tag }),
});

export const getPipelineOperation = defineOperation({
  name: 'getPipeline',
  summary: 'One pipeline, with its active version and document.',
  access: read,
  effect: 'read',
  run: async ({ db, project }, { pipelineId }: OnePipeline) => ({ pipeline: await getPipeline(db, project, pipelineId) }),
});

export const createPipelineOperation = defineOperation({
  name: 'createPipeline',
  summary: 'Create a pipeline: its first version (active, on branch main) and your draft. Launches nothing.',
  access: write,
  effect: 'write',
  idempotent: true,
  run: ({ db, principal, project }, { projectId: _projectId, ...input }: InProject & PipelineInput) => createPipeline(db, principal, project, input),
});

export const getPipelineDraftOperation = defineOperation({
  name: 'getPipelineDraft',
  summary: 'Your own draft (one per accountable member); before you save one, a draft that starts from the active version.',
  access: read,
  effect: 'read',
  run: async ({ db, principal, project }, { pipelineId }: OnePipeline) => ({ draft: await getDraft(db, principal, project, pipelineId) }),
});

export const savePipelineDraftOperation = defineOperation({
  name: 'savePipelineDraft',
  summary: 'Replace your draft. It may be unfinished; the active version is unchanged.',
  access: write,
  effect: 'write',
  idempotent: true,
  run: async ({ db, principal, project }, { pipelineId, document, workspaceState, basedOnVersionId }: OnePipeline & { document: PipelineDocument; workspaceState?: Record<string, unknown>; basedOnVersionId?: string }) => ({
    draft: await saveDraft(db, principal, project, pipelineId, { document, workspaceState, basedOnVersionId }),
  }),
});

export const validatePipelineDraftOperation = defineOperation({
  name: 'validatePipelineDraft',
  summary: 'Validate your draft: the graph, endpoint references, roles, capability support and field compatibility, every problem at once.',
  access: { ...read, actor: 'accountable' },
  effect: 'read',
  run: ({ db, principal, project }, { pipelineId }: OnePipeline) => validateDraft(db, principal, project, pipelineId),
});

export const commitPipelineVersionOperation = defineOperation({
  name: 'commitPipelineVersion',
  summary: 'Commit a document as a new version on a branch (default main). The active version is unchanged.',
  access: write,
  effect: 'write',
  idempotent: true,
  run: async ({ db, principal, project }, { pipelineId, projectId: _projectId, ...input }: OnePipeline & CommitInput) => ({ version: await commitVersion(db, principal, project, pipelineId, input) }),
});

export const listPipelineVersionsOperation = defineOperation({
  name: 'listPipelineVersions',
  summary: 'Committed versions, newest first; versionId selects one, branchName one branch.',
  access: read,
  effect: 'read',
  run: ({ db, project }, { pipelineId, limit, offset, versionId, branchName }: OnePipeline & PageRequest & { versionId?: string; branchName?: string }) =>
    listVersions(db, project, pipelineId, { limit, offset }, { versionId, branchName }),
});

export const activatePipelineVersionOperation = defineOperation({
  name: 'activatePipelineVersion',
  summary: 'Make a committed version the one launches run. A body versionId that differs from the path is a 409.',
  access: write,
  effect: 'write',
  run: async ({ db, project }, input: OnePipeline & { versionId: string; expectedVersionId?: string }) => ({
    pipeline: await activateVersion(db, project, input.pipelineId, input.versionId, input.expectedVersionId),
  }),
});

export const createPipelineBranchOperation = defineOperation({
  name: 'createPipelineBranch',
  summary: 'Create a branch at a version (default the active one); commit to it with branchName.',
  access: write,
  effect: 'write',
  idempotent: true,
  run: async ({ db, principal, project }, { pipelineId, name, sourceVersionId }: OnePipeline & { name: string; sourceVersionId?: string }) => ({
    branch: await createBranch(db, principal, project, pipelineId, { name, sourceVersionId }),
  }),
});

export const replacePipelineDocumentOperation = defineOperation({
  name: 'replacePipelineDocument',
  summary: 'Replace the document: commits it as a new version (on branchName, default main) and makes that version active.',
  access: write,
  effect: 'write',
  run: ({ db, principal, project }, { pipelineId, projectId: _projectId, ...input }: OnePipeline & CommitInput) => replaceDocument(db, principal, project, pipelineId, input),
});

export const updatePipelineSettingsOperation = defineOperation({
  name: 'updatePipelineSettings',
  summary: 'Change name, description or tags.',
  access: write,
  effect: 'write',
  run: async ({ db, project }, { pipelineId, name, description, tags }: OnePipeline & { name?: string; description?: string; tags?: string[] }) => ({
    pipeline: await updatePipelineSettings(db, project, pipelineId, { name, description, tags }),
  }),
});

export const deletePipelineOperation = defineOperation({
  name: 'deletePipeline',
  summary: 'Delete the pipeline: definition, versions, branches, drafts, positions and schedules. Its runs stay readable.',
  access: write,
  effect: 'write',
  idempotent: true,
  run: async ({ db, deps, project }, { pipelineId }: OnePipeline) => {
    await deletePipeline(db, deps.temporal, project, pipelineId);
    return { deleted: true, pipelineId };
  },
});

export const executePipelineOperation = defineOperation({
  name: 'executePipeline',
  summary: 'Launch the active version. 202 with the run (queued behind an open run of this pipeline); poll it with runs:read.',
  access: { scopes: { anyOf: ['pipelines:execute'] }, project: true, actor: 'accountable' },
  effect: 'write',
  idempotent: true,
  run: async ({ db, deps, principal, project }, { pipelineId }: OnePipeline) => ({ run: await launchRun(db, deps.temporal, principal, project, pipelineId) }),
});

export const previewPipelineOperation = defineOperation({
  name: 'previewPipeline',
  summary: 'Run your draft (or a version) on a sample of each source through the whole graph: every node\'s output. Nothing is written and no position moves.',
  // A preview reads source records: it needs data:read as well, and the data guard checks each source.
  access: { scopes: { allOf: ['pipelines:write', 'data:read'] }, project: true, actor: 'accountable' },
  effect: 'external',
  run: async ({ db, deps, principal, project }, { pipelineId, versionId, sampleSize }: OnePipeline & { versionId?: string; sampleSize?: number }) => ({
    preview: await previewPipeline(db, deps.encryptionKey, principal, project, pipelineId, { versionId, sampleSize }),
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
