import type { RunStatus } from '../../db/models';
import type { PageRequest } from '../../services/shared/pagination';
import { getRun, launchRun, listRuns, projectOfPipeline } from '../../services/pipelines/runs';
import { requireProject } from '../../services/tenancy/projects';
import { defineRoute } from '../route-spec';
import { idParams, listQuery, listResponse, uuid } from '../schemas/common';
import { launchBody, runSchema, runStatusFilter, runSummarySchema } from '../schemas/pipelines';

const PROJECT_RUNS = '/api/v1/projects/:project_id/runs';
const WORKSPACE_RUNS = '/api/v1/runs';
const tag = 'Runs';
const runResponse = { type: 'object', required: ['run'], properties: { run: runSchema } };
const runsQuery = listQuery({ status: runStatusFilter, pipelineId: uuid });
const launchAuth = { scopes: ['pipelines:execute'], accountableActor: true } as const;
// Run detail needs an accountable actor; listings need one who administers the workspace (SPEC 4.3).
const detailAuth = { scopes: ['runs:read'], accountableActor: true } as const;
const listAuth = { scopes: ['runs:read'], accountableActor: true, administratorActor: true } as const;

type RunsQuery = PageRequest & { status?: RunStatus; pipelineId?: string };

export const runRoutes = [
  defineRoute<{ project_id: string }, Record<string, never>, { pipelineId: string }>({
    method: 'post',
    path: PROJECT_RUNS,
    operationId: 'launchProjectRun',
    summary: 'Launch a pipeline of this project (the alternate launch route). 202 with the queued run.',
    tag,
    auth: { ...launchAuth, projectParam: 'project_id' },
    idempotent: true,
    params: idParams('project_id'),
    body: launchBody,
    responses: { 202: { description: 'The run, queued', schema: runResponse } },
    async handler({ db, principal, project, body, deps }) {
      return { status: 202, body: { run: await launchRun(db, deps.temporal, principal, project, body.pipelineId) } };
    },
  }),
  defineRoute<{ project_id: string }, RunsQuery>({
    method: 'get',
    path: PROJECT_RUNS,
    operationId: 'listProjectRuns',
    summary: 'Runs of this project\'s pipelines, newest first, filtered by status and pipelineId.',
    tag,
    auth: { ...listAuth, projectParam: 'project_id' },
    params: idParams('project_id'),
    query: runsQuery,
    responses: { 200: { description: 'A page of runs', schema: listResponse('runs', runSummarySchema) } },
    async handler({ db, principal, project, query }) {
      const { limit, offset, ...filter } = query;
      return { body: await listRuns(db, principal, { limit, offset }, { ...filter, project }) };
    },
  }),
  defineRoute<{ project_id: string; run_id: string }>({
    method: 'get',
    path: `${PROJECT_RUNS}/:run_id`,
    operationId: 'getProjectRun',
    summary: 'One run of a pipeline of this project: status, per-node results (live while running), error evidence and its Temporal workflow.',
    tag,
    auth: { ...detailAuth, projectParam: 'project_id' },
    params: idParams('project_id', 'run_id'),
    responses: { 200: { description: 'The run', schema: runResponse } },
    async handler({ db, principal, project, params }) {
      return { body: { run: await getRun(db, principal, params.run_id, project) } };
    },
  }),
  defineRoute<Record<string, string>, Record<string, never>, { pipelineId: string }>({
    method: 'post',
    path: WORKSPACE_RUNS,
    operationId: 'launchRun',
    summary: 'Launch a pipeline by id (its project must be in the key\'s allowlist). 202 with the queued run.',
    tag,
    auth: launchAuth,
    idempotent: true,
    body: launchBody,
    responses: { 202: { description: 'The run, queued', schema: runResponse } },
    async handler({ db, principal, body, deps }) {
      const project = await projectOfPipeline(db, principal, body.pipelineId);
      return { status: 202, body: { run: await launchRun(db, deps.temporal, principal, project, body.pipelineId) } };
    },
  }),
  defineRoute<Record<string, string>, RunsQuery & { projectId?: string }>({
    method: 'get',
    path: WORKSPACE_RUNS,
    operationId: 'listRuns',
    summary: 'Runs across the projects the key may use, newest first, filtered by status, pipelineId and projectId.',
    tag,
    auth: listAuth,
    query: listQuery({ status: runStatusFilter, pipelineId: uuid, projectId: uuid }),
    // The projectId filter must name a project of the workspace (requireProject below).
    errors: [{ status: 404, description: 'projectId names no project of this workspace.' }],
    responses: { 200: { description: 'A page of runs', schema: listResponse('runs', runSummarySchema) } },
    async handler({ db, principal, query }) {
      const { limit, offset, projectId, ...filter } = query;
      const project = projectId ? await requireProject(db, principal, projectId) : undefined;
      return { body: await listRuns(db, principal, { limit, offset }, { ...filter, project }) };
    },
  }),
  defineRoute<{ run_id: string }>({
    method: 'get',
    path: `${WORKSPACE_RUNS}/:run_id`,
    operationId: 'getRun',
    summary: 'One run, in a project the key may use.',
    tag,
    auth: detailAuth,
    params: idParams('run_id'),
    responses: { 200: { description: 'The run', schema: runResponse } },
    async handler({ db, principal, params }) {
      return { body: { run: await getRun(db, principal, params.run_id) } };
    },
  }),
];
