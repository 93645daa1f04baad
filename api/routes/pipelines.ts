import { PermissionError } from '../../core/errors';
import type { PipelineDocument } from '../../pipelines/document';
import { hasScope } from '../../services/tenancy/access';
import type { PageRequest } from '../../services/shared/pagination';
import { previewPipeline } from '../../services/pipelines/pipeline-preview';
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
} from '../../services/pipelines/pipelines';
import { launchRun } from '../../services/pipelines/runs';
import { defineRoute } from '../route-spec';
import { idParams, listQuery, listResponse, uuid } from '../schemas/common';
import {
  activateBody,
  branchName,
  branchSchema,
  commitVersionBody,
  createBranchBody,
  createPipelineBody,
  draftSchema,
  pipelineSchema,
  previewBody,
  previewSchema,
  problemListSchema,
  runSchema,
  saveDraftBody,
  updatePipelineBody,
  versionSchema,
} from '../schemas/pipelines';

const BASE = '/api/v1/projects/:project_id/pipelines';
const ONE = `${BASE}/:pipeline_id`;
const projectParams = idParams('project_id');
const pipelineParams = idParams('project_id', 'pipeline_id');
const tag = 'Pipelines';
const read = { scopes: ['pipelines:read'], projectParam: 'project_id' } as const;
const write = { scopes: ['pipelines:write'], projectParam: 'project_id', accountableActor: true } as const;
const wrap = (name: string, schema: unknown) => ({ type: 'object', required: [name], properties: { [name]: schema } });

type PipelineParams = { project_id: string; pipeline_id: string };

export const pipelineRoutes = [
  defineRoute<{ project_id: string }, PageRequest & { name?: string; tag?: string }>({
    method: 'get',
    path: BASE,
    operationId: 'listPipelines',
    summary: 'List the project\'s pipelines, filtered by exact name or tag.',
    tag,
    auth: read,
    params: projectParams,
    query: listQuery({ name: { type: 'string', minLength: 1, maxLength: 200 }, tag: { type: 'string', minLength: 1, maxLength: 100 } }),
    responses: { 200: { description: 'A page of pipelines', schema: listResponse('pipelines', pipelineSchema) } },
    async handler({ db, project, query }) {
      const { limit, offset, ...filter } = query;
      return { body: await listPipelines(db, project, { limit, offset }, filter) };
    },
  }),
  defineRoute<PipelineParams>({
    method: 'get',
    path: ONE,
    operationId: 'getPipeline',
    summary: 'One pipeline, with its active version and document.',
    tag,
    auth: read,
    params: pipelineParams,
    responses: { 200: { description: 'The pipeline', schema: wrap('pipeline', pipelineSchema) } },
    async handler({ db, project, params }) {
      return { body: { pipeline: await getPipeline(db, project, params.pipeline_id) } };
    },
  }),
  defineRoute<{ project_id: string }, Record<string, never>, PipelineInput>({
    method: 'post',
    path: BASE,
    operationId: 'createPipeline',
    summary: 'Create a pipeline: its first version (active, on branch main) and your draft. Launches nothing.',
    description: 'The document is validated as at every commit: every problem comes back at once, each with its node id.',
    tag,
    auth: write,
    idempotent: true,
    params: projectParams,
    body: createPipelineBody,
    responses: {
      201: {
        description: 'The pipeline, its initial version and your draft',
        schema: { type: 'object', required: ['pipeline', 'version', 'draft'], properties: { pipeline: pipelineSchema, version: versionSchema, draft: draftSchema } },
      },
    },
    async handler({ db, principal, project, body }) {
      return { status: 201, body: await createPipeline(db, principal, project, body) };
    },
  }),
  defineRoute<PipelineParams>({
    method: 'get',
    path: `${ONE}/draft`,
    operationId: 'getPipelineDraft',
    summary: 'Your own draft (one per accountable member); before you save one, a draft that starts from the active version.',
    tag,
    auth: read,
    params: pipelineParams,
    responses: { 200: { description: 'Your draft', schema: wrap('draft', draftSchema) } },
    async handler({ db, principal, project, params }) {
      return { body: { draft: await getDraft(db, principal, project, params.pipeline_id) } };
    },
  }),
  defineRoute<PipelineParams, Record<string, never>, { document: PipelineDocument; workspaceState?: Record<string, unknown> }>({
    method: 'put',
    path: `${ONE}/draft`,
    operationId: 'savePipelineDraft',
    summary: 'Replace your draft. It may be unfinished; the active version is unchanged.',
    tag,
    auth: write,
    params: pipelineParams,
    body: saveDraftBody,
    responses: { 200: { description: 'Your saved draft', schema: wrap('draft', draftSchema) } },
    async handler({ db, principal, project, params, body }) {
      return { body: { draft: await saveDraft(db, principal, project, params.pipeline_id, body) } };
    },
  }),
  defineRoute<PipelineParams>({
    method: 'post',
    path: `${ONE}/draft/validate`,
    operationId: 'validatePipelineDraft',
    summary: 'Validate your draft: the graph, endpoint references, roles, capability support and field compatibility, every problem at once.',
    tag,
    auth: { ...read, accountableActor: true },
    transaction: false,
    params: pipelineParams,
    responses: { 200: { description: 'Validation result', schema: problemListSchema } },
    async handler({ db, principal, project, params }) {
      return { body: await validateDraft(db, principal, project, params.pipeline_id) };
    },
  }),
  defineRoute<PipelineParams, Record<string, never>, CommitInput>({
    method: 'post',
    path: `${ONE}/versions`,
    operationId: 'commitPipelineVersion',
    summary: 'Commit a document as a new version on a branch (default main). The active version is unchanged.',
    tag,
    auth: write,
    idempotent: true,
    params: pipelineParams,
    body: commitVersionBody,
    responses: { 201: { description: 'The new version', schema: wrap('version', versionSchema) } },
    async handler({ db, principal, project, params, body }) {
      return { status: 201, body: { version: await commitVersion(db, principal, project, params.pipeline_id, body) } };
    },
  }),
  defineRoute<PipelineParams, PageRequest & { versionId?: string; branchName?: string }>({
    method: 'get',
    path: `${ONE}/versions`,
    operationId: 'listPipelineVersions',
    summary: 'Committed versions, newest first; versionId selects one, branchName one branch.',
    tag,
    auth: read,
    params: pipelineParams,
    query: listQuery({ versionId: uuid, branchName }),
    responses: { 200: { description: 'A page of versions', schema: listResponse('versions', versionSchema) } },
    async handler({ db, project, params, query }) {
      const { limit, offset, ...filter } = query;
      return { body: await listVersions(db, project, params.pipeline_id, { limit, offset }, filter) };
    },
  }),
  defineRoute<PipelineParams & { version_id: string }, Record<string, never>, { versionId?: string }>({
    method: 'post',
    path: `${ONE}/versions/:version_id/activate`,
    operationId: 'activatePipelineVersion',
    summary: 'Make a committed version the one launches run. A body versionId that differs from the path is a 409.',
    tag,
    auth: write,
    params: idParams('project_id', 'pipeline_id', 'version_id'),
    body: activateBody,
    responses: { 200: { description: 'The pipeline with its new active version', schema: wrap('pipeline', pipelineSchema) } },
    async handler({ db, project, params, body }) {
      return { body: { pipeline: await activateVersion(db, project, params.pipeline_id, params.version_id, body.versionId) } };
    },
  }),
  defineRoute<PipelineParams, Record<string, never>, { name: string; sourceVersionId?: string }>({
    method: 'post',
    path: `${ONE}/branches`,
    operationId: 'createPipelineBranch',
    summary: 'Create a branch at a version (default the active one); commit to it with branchName.',
    tag,
    auth: write,
    idempotent: true,
    params: pipelineParams,
    body: createBranchBody,
    responses: { 201: { description: 'The new branch', schema: wrap('branch', branchSchema) } },
    async handler({ db, principal, project, params, body }) {
      return { status: 201, body: { branch: await createBranch(db, principal, project, params.pipeline_id, body) } };
    },
  }),
  defineRoute<PipelineParams, Record<string, never>, CommitInput>({
    method: 'put',
    path: ONE,
    operationId: 'replacePipelineDocument',
    summary: 'Replace the document: commits it as a new version (on branchName, default main) and makes that version active.',
    tag,
    auth: write,
    params: pipelineParams,
    body: commitVersionBody,
    responses: { 200: { description: 'The pipeline and the new version', schema: { type: 'object', required: ['pipeline', 'version'], properties: { pipeline: pipelineSchema, version: versionSchema } } } },
    async handler({ db, principal, project, params, body }) {
      return { body: await replaceDocument(db, principal, project, params.pipeline_id, body) };
    },
  }),
  defineRoute<PipelineParams, Record<string, never>, { name?: string; description?: string; tags?: string[] }>({
    method: 'patch',
    path: ONE,
    operationId: 'updatePipelineSettings',
    summary: 'Change name, description or tags.',
    tag,
    auth: write,
    params: pipelineParams,
    body: updatePipelineBody,
    responses: { 200: { description: 'The pipeline', schema: wrap('pipeline', pipelineSchema) } },
    async handler({ db, project, params, body }) {
      return { body: { pipeline: await updatePipelineSettings(db, project, params.pipeline_id, body) } };
    },
  }),
  defineRoute<PipelineParams>({
    method: 'delete',
    path: ONE,
    operationId: 'deletePipeline',
    summary: 'Delete the pipeline: definition, versions, branches, drafts, positions and schedules. Its runs stay readable.',
    tag,
    auth: write,
    params: pipelineParams,
    responses: { 204: { description: 'Deleted' } },
    async handler({ db, project, params, deps }) {
      await deletePipeline(db, deps.temporal, project, params.pipeline_id);
      return { status: 204 };
    },
  }),
  defineRoute<PipelineParams>({
    method: 'post',
    path: `${ONE}/execute`,
    operationId: 'executePipeline',
    summary: 'Launch the active version. 202 with the run (queued behind an open run of this pipeline); poll it with runs:read.',
    tag,
    auth: { scopes: ['pipelines:execute'], projectParam: 'project_id', accountableActor: true },
    idempotent: true,
    params: pipelineParams,
    responses: { 202: { description: 'The run, queued', schema: wrap('run', runSchema) } },
    async handler({ db, principal, project, params, deps }) {
      return { status: 202, body: { run: await launchRun(db, deps.temporal, principal, project, params.pipeline_id) } };
    },
  }),
  defineRoute<PipelineParams, Record<string, never>, { versionId?: string; sampleSize?: number }>({
    method: 'post',
    path: `${ONE}/preview`,
    operationId: 'previewPipeline',
    summary: 'Run your draft (or a version) on a sample of each source through the whole graph: every node\'s output. Nothing is written and no position moves.',
    description: 'Reads source records, so the key also needs data:read.',
    tag,
    auth: write,
    transaction: false,
    params: pipelineParams,
    body: previewBody,
    errors: [{ status: 502 }],
    responses: { 200: { description: 'Each node\'s output', schema: previewSchema } },
    async handler({ db, principal, project, params, body, deps }) {
      if (!hasScope(principal, 'data:read')) throw new PermissionError('insufficient_scope', 'A preview reads source records: this API key also needs data:read.', { requiredScopes: ['data:read'] });
      return { body: { preview: await previewPipeline(db, deps.encryptionKey, principal, project, params.pipeline_id, body) } };
    },
  }),
];
