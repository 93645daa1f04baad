import {
  activatePipelineVersionOperation,
  commitPipelineVersionOperation,
  createPipelineBranchOperation,
  createPipelineOperation,
  deletePipelineOperation,
  executePipelineOperation,
  getPipelineDraftOperation,
  getPipelineOperation,
  listPipelinesOperation,
  listPipelineVersionsOperation,
  previewPipelineOperation,
  replacePipelineDocumentOperation,
  savePipelineDraftOperation,
  updatePipelineSettingsOperation,
  validatePipelineDraftOperation,
} from '../../services/pipelines/operations';
import { defineRoute } from '../route-spec';
import { listResponse } from '../../schemas/common';
import { branchSchema, draftSchema, pipelineSchema, previewSchema, problemListSchema, runSchema, versionSchema } from '../../schemas/pipelines';

const BASE = '/api/v1/projects/:project_id/pipelines';
const ONE = `${BASE}/:pipeline_id`;
const tag = 'Pipelines';
const wrap = (name: string, schema: unknown) => ({ type: 'object', required: [name], properties: { [name]: schema } });

export const pipelineRoutes = [
  defineRoute({
    method: 'get',
    path: BASE,
    operation: listPipelinesOperation,
    tag,
    responses: { 200: { description: 'A page of pipelines', schema: listResponse('pipelines', pipelineSchema) } },
  }),
  defineRoute({
    method: 'get',
    path: ONE,
    operation: getPipelineOperation,
    tag,
    responses: {
      200: {
        description: 'The pipeline and its branches',
        schema: { type: 'object', required: ['pipeline', 'branches'], properties: { pipeline: pipelineSchema, branches: { type: 'array', items: branchSchema } } },
      },
    },
  }),
  defineRoute({
    method: 'post',
    path: BASE,
    operation: createPipelineOperation,
    description: 'The document is validated as at every commit: every problem comes back at once, each with its node id.',
    tag,
    responses: {
      201: {
        description: 'The pipeline, its initial version and your draft',
        schema: { type: 'object', required: ['pipeline', 'version', 'draft'], properties: { pipeline: pipelineSchema, version: versionSchema, draft: draftSchema } },
      },
    },
  }),
  defineRoute({
    method: 'get',
    path: `${ONE}/draft`,
    operation: getPipelineDraftOperation,
    tag,
    responses: { 200: { description: 'Your draft', schema: wrap('draft', draftSchema) } },
  }),
  defineRoute({
    method: 'put',
    path: `${ONE}/draft`,
    operation: savePipelineDraftOperation,
    tag,
    responses: { 200: { description: 'Your saved draft', schema: wrap('draft', draftSchema) } },
  }),
  defineRoute({
    method: 'post',
    path: `${ONE}/draft/validate`,
    operation: validatePipelineDraftOperation,
    tag,
    responses: { 200: { description: 'Validation result', schema: problemListSchema } },
  }),
  defineRoute({
    method: 'post',
    path: `${ONE}/versions`,
    operation: commitPipelineVersionOperation,
    tag,
    responses: { 201: { description: 'The new version', schema: wrap('version', versionSchema) } },
  }),
  defineRoute({
    method: 'get',
    path: `${ONE}/versions`,
    operation: listPipelineVersionsOperation,
    tag,
    responses: { 200: { description: 'A page of versions', schema: listResponse('versions', versionSchema) } },
  }),
  defineRoute({
    method: 'post',
    path: `${ONE}/versions/:version_id/activate`,
    operation: activatePipelineVersionOperation,
    tag,
    responses: { 200: { description: 'The pipeline with its new active version', schema: wrap('pipeline', pipelineSchema) } },
  }),
  defineRoute({
    method: 'post',
    path: `${ONE}/branches`,
    operation: createPipelineBranchOperation,
    tag,
    responses: { 201: { description: 'The new branch', schema: wrap('branch', branchSchema) } },
  }),
  defineRoute({
    method: 'put',
    path: ONE,
    operation: replacePipelineDocumentOperation,
    tag,
    responses: { 200: { description: 'The pipeline and the new version', schema: { type: 'object', required: ['pipeline', 'version'], properties: { pipeline: pipelineSchema, version: versionSchema } } } },
  }),
  defineRoute({
    method: 'patch',
    path: ONE,
    operation: updatePipelineSettingsOperation,
    tag,
    responses: { 200: { description: 'The pipeline', schema: wrap('pipeline', pipelineSchema) } },
  }),
  defineRoute({
    method: 'delete',
    path: ONE,
    operation: deletePipelineOperation,
    tag,
    responses: { 204: { description: 'Deleted' } },
  }),
  defineRoute({
    method: 'post',
    path: `${ONE}/execute`,
    operation: executePipelineOperation,
    tag,
    responses: { 202: { description: 'The run, queued', schema: wrap('run', runSchema) } },
  }),
  defineRoute({
    method: 'post',
    path: `${ONE}/preview`,
    operation: previewPipelineOperation,
    description: 'Reads source records, so the key also needs data:read.',
    tag,
    errors: [{ status: 502 }],
    responses: { 200: { description: 'Each node\'s output', schema: previewSchema } },
  }),
];
