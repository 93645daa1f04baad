import { launchProjectRunOperation, listProjectRunsOperation, getProjectRunOperation, launchRunOperation, listRunsOperation, getRunOperation } from '../../services/pipelines/run-operations';
import { defineRoute } from '../route-spec';

const PROJECT_RUNS = '/api/v1/projects/:project_id/runs';
const WORKSPACE_RUNS = '/api/v1/runs';
const tag = 'Runs';

export const runRoutes = [
  defineRoute({
    method: 'post',
    path: PROJECT_RUNS,
    operation: launchProjectRunOperation,
    tag,
  }),
  defineRoute({
    method: 'get',
    path: PROJECT_RUNS,
    operation: listProjectRunsOperation,
    tag,
  }),
  defineRoute({
    method: 'get',
    path: `${PROJECT_RUNS}/:run_id`,
    operation: getProjectRunOperation,
    tag,
  }),
  defineRoute({
    method: 'post',
    path: WORKSPACE_RUNS,
    operation: launchRunOperation,
    tag,
  }),
  defineRoute({
    method: 'get',
    path: WORKSPACE_RUNS,
    operation: listRunsOperation,
    tag,
    // The projectId filter must name a project of the workspace (requireProject below).
    errors: [{ status: 404, description: 'projectId names no project of this workspace.' }],
  }),
  defineRoute({
    method: 'get',
    path: `${WORKSPACE_RUNS}/:run_id`,
    operation: getRunOperation,
    tag,
  }),
];
