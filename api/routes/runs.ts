import { launchProjectRunOperation, listProjectRunsOperation, getProjectRunOperation, launchRunOperation, listRunsOperation, getRunOperation } from '../../services/pipelines/run-operations';
import { defineRoute } from '../route-spec';
import { listResponse } from '../../schemas/common';
import { runSchema, runSummarySchema } from '../../schemas/pipelines';

const PROJECT_RUNS = '/api/v1/projects/:project_id/runs';
const WORKSPACE_RUNS = '/api/v1/runs';
const tag = 'Runs';
const runResponse = { type: 'object', required: ['run'], properties: { run: runSchema } };

export const runRoutes = [
  defineRoute({
    method: 'post',
    path: PROJECT_RUNS,
    operation: launchProjectRunOperation,
    tag,
    responses: { 202: { description: 'The run, queued', schema: runResponse } },
  }),
  defineRoute({
    method: 'get',
    path: PROJECT_RUNS,
    operation: listProjectRunsOperation,
    tag,
    responses: { 200: { description: 'A page of runs', schema: listResponse('runs', runSummarySchema) } },
  }),
  defineRoute({
    method: 'get',
    path: `${PROJECT_RUNS}/:run_id`,
    operation: getProjectRunOperation,
    tag,
    responses: { 200: { description: 'The run', schema: runResponse } },
  }),
  defineRoute({
    method: 'post',
    path: WORKSPACE_RUNS,
    operation: launchRunOperation,
    tag,
    responses: { 202: { description: 'The run, queued', schema: runResponse } },
  }),
  defineRoute({
    method: 'get',
    path: WORKSPACE_RUNS,
    operation: listRunsOperation,
    tag,
    // The projectId filter must name a project of the workspace (requireProject below).
    errors: [{ status: 404, description: 'projectId names no project of this workspace.' }],
    responses: { 200: { description: 'A page of runs', schema: listResponse('runs', runSummarySchema) } },
  }),
  defineRoute({
    method: 'get',
    path: `${WORKSPACE_RUNS}/:run_id`,
    operation: getRunOperation,
    tag,
    responses: { 200: { description: 'The run', schema: runResponse } },
  }),
];
