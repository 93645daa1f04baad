import type { OperationContext } from '../operations/context';
import { cancelRun } from './runs';
import { createPipelineSchedule, deletePipelineSchedule, listPipelineSchedules, ScheduleSpecInput } from './pipeline-schedules';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import type { RunStatus } from '../../db/models';
import type { PageRequest } from '../shared/pagination';
import { getRun, launchRun, listRuns, projectOfPipeline } from './runs';
import { requireProject } from '../tenancy/projects';

const launchAuth = { scopes: { anyOf: ['pipelines:execute'] }, actor: 'accountable' as const } as const;
// Run detail needs an accountable actor; listings need one who administers the workspace (SPEC 4.3).
const detailAuth = { scopes: { anyOf: ['runs:read'] }, actor: 'accountable' as const } as const;
const listAuth = { scopes: { anyOf: ['runs:read'] }, actor: 'administrator' as const } as const;

type RunsQuery = PageRequest & { status?: RunStatus; pipelineId?: string };

export const launchProjectRunOperation = defineOperation({
  name: 'launchProjectRun',
  summary: 'Launch a pipeline of this project (the alternate launch route). 202 with the queued run.',
  access: { ...launchAuth, project: true },
  effect: 'write',
  idempotent: true,
  async run({ db, principal, project, deps }: OperationContext, { body }: RequestInput<{ project_id: string }, Record<string, never>, { pipelineId: string }>): Promise<Reply> {
    return { status: 202, body: { run: await launchRun(db, deps.temporal, principal, project, body.pipelineId) } };
  },
});

export const listProjectRunsOperation = defineOperation({
  name: 'listProjectRuns',
  summary: 'Runs of this project\'s pipelines, newest first, filtered by status and pipelineId.',
  access: { ...listAuth, project: true },
  effect: 'read',
  async run({ db, principal, project }: OperationContext, { query }: RequestInput<{ project_id: string }, RunsQuery, undefined>): Promise<Reply> {
    const { limit, offset, ...filter } = query;
    return { body: await listRuns(db, principal, { limit, offset }, { ...filter, project }) };
  },
});

export const getProjectRunOperation = defineOperation({
  name: 'getProjectRun',
  summary: 'One run of a pipeline of this project: status, per-node results (live while running), error evidence and its Temporal workflow.',
  access: { ...detailAuth, project: true },
  effect: 'read',
  async run({ db, principal, project }: OperationContext, { params }: RequestInput<{ project_id: string; run_id: string }, Record<string, never>, undefined>): Promise<Reply> {
    return { body: { run: await getRun(db, principal, params.run_id, project) } };
  },
});

export const launchRunOperation = defineOperation({
  name: 'launchRun',
  summary: 'Launch a pipeline by id (its project must be in the key\'s allowlist). 202 with the queued run.',
  access: launchAuth,
  effect: 'write',
  idempotent: true,
  async run({ db, principal, deps }: OperationContext, { body }: RequestInput<Record<string, string>, Record<string, never>, { pipelineId: string }>): Promise<Reply> {
    const project = await projectOfPipeline(db, principal, body.pipelineId);
    return { status: 202, body: { run: await launchRun(db, deps.temporal, principal, project, body.pipelineId) } };
  },
});

export const listRunsOperation = defineOperation({
  name: 'listRuns',
  summary: 'Runs across the projects the key may use, newest first, filtered by status, pipelineId and projectId.',
  access: listAuth,
  effect: 'read',
  async run({ db, principal }: OperationContext, { query }: RequestInput<Record<string, string>, RunsQuery & { projectId?: string }, undefined>): Promise<Reply> {
    const { limit, offset, projectId, ...filter } = query;
    const project = projectId ? await requireProject(db, principal, projectId) : undefined;
    return { body: await listRuns(db, principal, { limit, offset }, { ...filter, project }) };
  },
});

export const getRunOperation = defineOperation({
  name: 'getRun',
  summary: 'One run, in a project the key may use.',
  access: detailAuth,
  effect: 'read',
  async run({ db, principal }: OperationContext, { params }: RequestInput<{ run_id: string }, Record<string, never>, undefined>): Promise<Reply> {
    return { body: { run: await getRun(db, principal, params.run_id) } };
  },
});

export const runOperations = [
  launchProjectRunOperation,
  listProjectRunsOperation,
  getProjectRunOperation,
  launchRunOperation,
  listRunsOperation,
  getRunOperation,
];

// Operations with no public route (SPEC 4.3: runs are canceled and scheduled through MCP tools).

type OneRun = { projectId: string; runId: string };

export const cancelRunOperation = defineOperation({
  name: 'cancelRun',
  summary: 'Cancel a queued or running run: it ends canceled with nothing committed. A run that already ended is returned as it is.',
  // Both: canceling is launching's counterpart, and the answer is the run.
  access: { scopes: { allOf: ['pipelines:execute', 'runs:read'] }, project: true, actor: 'accountable' },
  effect: 'write',
  idempotent: true,
  async run({ db, deps, principal, project }: OperationContext, { runId }: OneRun) {
    await getRun(db, principal, runId, project); // the run must belong to the project
    return { run: await cancelRun(db, deps.temporal, principal, runId) };
  },
});

type OneSchedule = { projectId: string; pipelineId: string; scheduleId: string };

export const createPipelineScheduleOperation = defineOperation({
  name: 'createPipelineSchedule',
  summary: 'Launch the pipeline on a Temporal Schedule (every intervalSeconds, or on a cron in UTC).',
  access: { scopes: { anyOf: ['pipelines:execute'] }, project: true, actor: 'accountable' },
  effect: 'write',
  idempotent: true,
  async run({ db, deps, principal, project }: OperationContext, { projectId: _projectId, pipelineId, ...plan }: { projectId: string; pipelineId: string } & ScheduleSpecInput) {
    return { schedule: await createPipelineSchedule(db, deps.temporal, principal, project, pipelineId, plan) };
  },
});

export const listPipelineSchedulesOperation = defineOperation({
  name: 'listPipelineSchedules',
  summary: 'The pipeline’s schedules.',
  access: { scopes: { anyOf: ['pipelines:read'] }, project: true },
  effect: 'read',
  async run({ db, project }: OperationContext, { pipelineId }: { projectId: string; pipelineId: string }) {
    return { schedules: await listPipelineSchedules(db, project, pipelineId) };
  },
});

export const deletePipelineScheduleOperation = defineOperation({
  name: 'deletePipelineSchedule',
  summary: 'Delete a schedule of the pipeline. Runs it launched stay.',
  access: { scopes: { anyOf: ['pipelines:execute'] }, project: true, actor: 'accountable' },
  effect: 'write',
  idempotent: true,
  async run({ db, deps, project }: OperationContext, { pipelineId, scheduleId }: OneSchedule) {
    await deletePipelineSchedule(db, deps.temporal, project, pipelineId, scheduleId);
    return { deleted: true, scheduleId };
  },
});

export const toolOnlyRunOperations = [cancelRunOperation, createPipelineScheduleOperation, listPipelineSchedulesOperation, deletePipelineScheduleOperation];
