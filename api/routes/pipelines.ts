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

const BASE = '/api/v1/projects/:project_id/pipelines';
const ONE = `${BASE}/:pipeline_id`;
const tag = 'Pipelines';

export const pipelineRoutes = [
  defineRoute({
    method: 'get',
    path: BASE,
    operation: listPipelinesOperation,
    tag,
  }),
  defineRoute({
    method: 'get',
    path: ONE,
    operation: getPipelineOperation,
    tag,
  }),
  defineRoute({
    method: 'post',
    path: BASE,
    operation: createPipelineOperation,
    description: 'The document is validated as at every commit: every problem comes back at once, each with its node id.',
    tag,
  }),
  defineRoute({
    method: 'get',
    path: `${ONE}/draft`,
    operation: getPipelineDraftOperation,
    tag,
  }),
  defineRoute({
    method: 'put',
    path: `${ONE}/draft`,
    operation: savePipelineDraftOperation,
    tag,
  }),
  defineRoute({
    method: 'post',
    path: `${ONE}/draft/validate`,
    operation: validatePipelineDraftOperation,
    tag,
  }),
  defineRoute({
    method: 'post',
    path: `${ONE}/versions`,
    operation: commitPipelineVersionOperation,
    tag,
  }),
  defineRoute({
    method: 'get',
    path: `${ONE}/versions`,
    operation: listPipelineVersionsOperation,
    tag,
  }),
  defineRoute({
    method: 'post',
    path: `${ONE}/versions/:version_id/activate`,
    operation: activatePipelineVersionOperation,
    tag,
  }),
  defineRoute({
    method: 'post',
    path: `${ONE}/branches`,
    operation: createPipelineBranchOperation,
    tag,
  }),
  defineRoute({
    method: 'put',
    path: ONE,
    operation: replacePipelineDocumentOperation,
    tag,
  }),
  defineRoute({
    method: 'patch',
    path: ONE,
    operation: updatePipelineSettingsOperation,
    tag,
  }),
  defineRoute({
    method: 'delete',
    path: ONE,
    operation: deletePipelineOperation,
    tag,
  }),
  defineRoute({
    method: 'post',
    path: `${ONE}/execute`,
    operation: executePipelineOperation,
    tag,
  }),
  defineRoute({
    method: 'post',
    path: `${ONE}/preview`,
    operation: previewPipelineOperation,
    description: 'Reads source records, so the key also needs data:read.',
    tag,
    errors: [{ status: 502 }],
  }),
];
