import type { JsonSchema } from '../../core/schema-validator';
import type { PipelineDocument } from '../../pipelines/document';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
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
import { idParams, listResponse } from '../../schemas/common';
import { activateBody, branchSchema, commitVersionBody, createBranchBody, createPipelineBody, draftSchema, listPipelinesQuery, listVersionsQuery, pipelineParams, pipelineSchema, previewBody, previewSchema, problemListSchema, runSchema, saveDraftBody, updatePipelineBody, versionSchema } from '../../schemas/pipelines';

// The pipeline operations (SPEC 2.3): each declares its access once; HTTP routes and MCP tools
// invoke them (services/operations/invoke.ts).

const wrap = (name: string, schema: unknown) => ({ type: 'object', required: [name], properties: { [name]: schema } });

const read = { scopes: { anyOf: ['pipelines:read'] }, project: true } as const;
/** Pipeline documents name endpoints: creating or committing one passes the data guard on each (named read grants). */
const write = { scopes: { anyOf: ['pipelines:write'] }, project: true, actor: 'accountable', grants: 'read and write' } as const;

/** A draft save from a tool: the HTTP body and the version the edits started from (SPEC 4.3). */
const saveDraftOnBaseBody: JsonSchema = {
  ...saveDraftBody,
  properties: {
    ...(saveDraftBody.properties as Record<string, JsonSchema>),
    basedOnVersionId: { type: 'string', format: 'uuid', description: 'The version your edits started from: the active version or a branch head.' },
  },
};

type InProject = { project_id: string };
type OnePipeline = InProject & { pipeline_id: string };
type NoQuery = Record<string, never>;
type Draft = { document: PipelineDocument; workspaceState?: Record<string, unknown> };

export const listPipelinesOperation = defineOperation({
  name: 'listPipelines',
  summary: 'List the project\'s pipelines, filtered by exact name or tag.',
  access: read,
  effect: 'read',
  input: { params: idParams('project_id'), query: listPipelinesQuery },
  output: { 200: { description: 'A page of pipelines', schema: listResponse('pipelines', pipelineSchema) } },
  async run(ctx, { query }: RequestInput<InProject, PageRequest & { name?: string; tag?: string }>): Promise<Reply> {
    const { limit, offset, name, tag } = query;
    return { body: await listPipelines(ctx, { limit, offset }, { name, tag }) };
  },
});

export const getPipelineOperation = defineOperation({
  name: 'getPipeline',
  summary: 'One pipeline, with its active version and document, and its branches with their head versions.',
  access: read,
  effect: 'read',
  input: { params: pipelineParams },
  output: {
    200: {
      description: 'The pipeline and its branches',
      schema: { type: 'object', required: ['pipeline', 'branches'], properties: { pipeline: pipelineSchema, branches: { type: 'array', items: branchSchema } } },
    },
  },
  async run(ctx, { params }: RequestInput<OnePipeline>): Promise<Reply> {
    return { body: { pipeline: await getPipeline(ctx, params.pipeline_id), branches: await listBranches(ctx, params.pipeline_id) } };
  },
});

export const createPipelineOperation = defineOperation({
  name: 'createPipeline',
  summary: 'Create a pipeline: its first version (active, on branch main) and your draft. Launches nothing.',
  access: write,
  effect: 'write',
  input: { params: idParams('project_id'), body: createPipelineBody },
  idempotent: true,
  output: {
    201: {
      description: 'The pipeline, its initial version and your draft',
      schema: { type: 'object', required: ['pipeline', 'version', 'draft'], properties: { pipeline: pipelineSchema, version: versionSchema, draft: draftSchema } },
    },
  },
  async run(ctx, { body }: RequestInput<InProject, NoQuery, PipelineInput>): Promise<Reply> {
    return { status: 201, body: await createPipeline(ctx, body) };
  },
});

export const getPipelineDraftOperation = defineOperation({
  name: 'getPipelineDraft',
  summary: 'Your own draft (one per accountable member); before you save one, a draft that starts from the active version.',
  access: read,
  effect: 'read',
  input: { params: pipelineParams },
  output: { 200: { description: 'Your draft', schema: wrap('draft', draftSchema) } },
  async run(ctx, { params }: RequestInput<OnePipeline>): Promise<Reply> {
    return { body: { draft: await getDraft(ctx, params.pipeline_id) } };
  },
});

export const savePipelineDraftOperation = defineOperation({
  name: 'savePipelineDraft',
  summary: 'Replace your draft. It may be unfinished; the active version is unchanged.',
  access: write,
  effect: 'write',
  // basedOnVersionId is the MCP tool's (SPEC 4.3): the HTTP draft save does not take it.
  input: { params: pipelineParams, body: saveDraftOnBaseBody, httpBody: saveDraftBody },
  idempotent: true,
  output: { 200: { description: 'Your saved draft', schema: wrap('draft', draftSchema) } },
  async run(ctx, { params, body }: RequestInput<OnePipeline, NoQuery, Draft & { basedOnVersionId?: string }>): Promise<Reply> {
    const { document, workspaceState, basedOnVersionId } = body;
    return { body: { draft: await saveDraft(ctx, params.pipeline_id, { document, workspaceState, basedOnVersionId }) } };
  },
});

export const validatePipelineDraftOperation = defineOperation({
  name: 'validatePipelineDraft',
  summary: 'Validate your draft: the graph, endpoint references, roles, capability support and field compatibility, every problem at once.',
  access: { ...read, actor: 'accountable', grants: 'read and write' as const },
  effect: 'read',
  input: { params: pipelineParams },
  output: { 200: { description: 'Validation result', schema: problemListSchema } },
  async run(ctx, { params }: RequestInput<OnePipeline>): Promise<Reply> {
    return { body: await validateDraft(ctx, params.pipeline_id) };
  },
});

export const commitPipelineVersionOperation = defineOperation({
  name: 'commitPipelineVersion',
  summary: 'Commit a document as a new version on a branch (default main). The active version is unchanged.',
  access: write,
  effect: 'write',
  input: { params: pipelineParams, body: commitVersionBody },
  idempotent: true,
  output: { 201: { description: 'The new version', schema: wrap('version', versionSchema) } },
  async run(ctx, { params, body }: RequestInput<OnePipeline, NoQuery, CommitInput>): Promise<Reply> {
    return { status: 201, body: { version: await commitVersion(ctx, params.pipeline_id, body) } };
  },
});

export const listPipelineVersionsOperation = defineOperation({
  name: 'listPipelineVersions',
  summary: 'Committed versions, newest first; versionId selects one, branchName one branch.',
  access: read,
  effect: 'read',
  input: { params: pipelineParams, query: listVersionsQuery },
  output: { 200: { description: 'A page of versions', schema: listResponse('versions', versionSchema) } },
  async run(ctx, { params, query }: RequestInput<OnePipeline, PageRequest & { versionId?: string; branchName?: string }>): Promise<Reply> {
    const { limit, offset, versionId, branchName } = query;
    return { body: await listVersions(ctx, params.pipeline_id, { limit, offset }, { versionId, branchName }) };
  },
});

export const activatePipelineVersionOperation = defineOperation({
  name: 'activatePipelineVersion',
  summary: 'Make a committed version the one launches run. A body versionId that differs from the path is a 409.',
  access: write,
  effect: 'write',
  input: { params: idParams('project_id', 'pipeline_id', 'version_id'), body: activateBody },
  output: { 200: { description: 'The pipeline with its new active version', schema: wrap('pipeline', pipelineSchema) } },
  async run(ctx, { params, body }: RequestInput<OnePipeline & { version_id: string }, NoQuery, { versionId?: string }>): Promise<Reply> {
    return { body: { pipeline: await activateVersion(ctx, params.pipeline_id, params.version_id, body.versionId) } };
  },
});

export const createPipelineBranchOperation = defineOperation({
  name: 'createPipelineBranch',
  summary: 'Create a branch at a version (default the active one); commit to it with branchName.',
  access: write,
  effect: 'write',
  input: { params: pipelineParams, body: createBranchBody },
  idempotent: true,
  output: { 201: { description: 'The new branch', schema: wrap('branch', branchSchema) } },
  async run(ctx, { params, body }: RequestInput<OnePipeline, NoQuery, { name: string; sourceVersionId?: string }>): Promise<Reply> {
    const { name, sourceVersionId } = body;
    return { status: 201, body: { branch: await createBranch(ctx, params.pipeline_id, { name, sourceVersionId }) } };
  },
});

export const replacePipelineDocumentOperation = defineOperation({
  name: 'replacePipelineDocument',
  summary: 'Replace the document: commits it as a new version (on branchName, default main) and makes that version active.',
  access: write,
  effect: 'write',
  input: { params: pipelineParams, body: commitVersionBody },
  output: { 200: { description: 'The pipeline and the new version', schema: { type: 'object', required: ['pipeline', 'version'], properties: { pipeline: pipelineSchema, version: versionSchema } } } },
  async run(ctx, { params, body }: RequestInput<OnePipeline, NoQuery, CommitInput>): Promise<Reply> {
    return { body: await replaceDocument(ctx, params.pipeline_id, body) };
  },
});

export const updatePipelineSettingsOperation = defineOperation({
  name: 'updatePipelineSettings',
  summary: 'Change name, description or tags.',
  access: write,
  effect: 'write',
  input: { params: pipelineParams, body: updatePipelineBody },
  output: { 200: { description: 'The pipeline', schema: wrap('pipeline', pipelineSchema) } },
  async run(ctx, { params, body }: RequestInput<OnePipeline, NoQuery, { name?: string; description?: string; tags?: string[] }>): Promise<Reply> {
    const { name, description, tags } = body;
    return { body: { pipeline: await updatePipelineSettings(ctx, params.pipeline_id, { name, description, tags }) } };
  },
});

export const deletePipelineOperation = defineOperation({
  name: 'deletePipeline',
  summary: 'Delete the pipeline: definition, versions, branches, drafts, positions and schedules. Its runs stay readable.',
  access: write,
  effect: 'write',
  input: { params: pipelineParams },
  idempotent: true,
  output: { 204: { description: 'Deleted' } },
  async run(ctx, { params }: RequestInput<OnePipeline>): Promise<Reply> {
    await deletePipeline(ctx, params.pipeline_id);
    // HTTP answers a 204 without the body; the MCP tool's result is the body.
    return { status: 204, body: { deleted: true, pipelineId: params.pipeline_id } };
  },
});

export const executePipelineOperation = defineOperation({
  name: 'executePipeline',
  summary: 'Launch the active version. 202 with the run (queued behind an open run of this pipeline); poll it with runs:read.',
  access: { scopes: { anyOf: ['pipelines:execute'] }, project: true, actor: 'accountable', grants: 'read and write' as const },
  effect: 'write',
  input: { params: pipelineParams },
  idempotent: true,
  output: { 202: { description: 'The run, queued', schema: wrap('run', runSchema) } },
  async run(ctx, { params }: RequestInput<OnePipeline>): Promise<Reply> {
    return { status: 202, body: { run: await launchRun(ctx, params.pipeline_id) } };
  },
});

export const previewPipelineOperation = defineOperation({
  name: 'previewPipeline',
  summary: 'Run your draft (or a version) on a sample of each source through the whole graph: every node\'s output. Nothing is written and no position moves.',
  // A preview reads source records: it needs data:read as well, and the data guard checks each source.
  access: { scopes: { allOf: ['pipelines:write', 'data:read'] }, project: true, actor: 'accountable', grants: 'read and write' as const },
  effect: 'external',
  input: { params: pipelineParams, body: previewBody },
  output: { 200: { description: 'Each node\'s output', schema: previewSchema } },
  async run(ctx, { params, body }: RequestInput<OnePipeline, NoQuery, { versionId?: string; sampleSize?: number }>): Promise<Reply> {
    const { versionId, sampleSize } = body;
    return { body: { preview: await previewPipeline(ctx, params.pipeline_id, { versionId, sampleSize }) } };
  },
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
