import type { OperationContext } from '../operations/context';
import { cancelRun } from './runs';
import { createPipelineSchedule, deletePipelineSchedule, listPipelineSchedules, ScheduleSpecInput, setPipelineSchedulePaused } from './pipeline-schedules';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import type { RunStatus } from '../../db/models';
import type { PageRequest } from '../shared/pagination';
import { getRun, launchRun, listRuns, projectOfPipeline } from './runs';
import { requireProject } from '../tenancy/projects';
import { idParams, listResponse, uuid } from '../../schemas/common';
import { launchBody, pipelineParams, pipelineScheduleSchema, projectRunsQuery, runSchema, runsQuery, runSummarySchema, schedulePlanBody, scheduleStateBody } from '../../schemas/pipelines';

const runResponse = { type: 'object', required: ['run'], properties: { run: runSchema } };

/** Launching passes the data guard over the pipeline's endpoints, named read grants included. */
const launchAuth = { scopes: { anyOf: ['pipelines:execute'] }, actor: 'accountable' as const, grants: 'read and write' as const } as const;
// Run detail needs an accountable actor; listings need one who administers the workspace (SPEC 4.3).
const detailAuth = { scopes: { anyOf: ['runs:read'] }, actor: 'accountable' as const } as const;
const listAuth = { scopes: { anyOf: ['runs:read'] }, actor: 'administrator' as const } as const;

type RunsQuery = PageRequest & { status?: RunStatus; pipelineId?: string };

export const launchProjectRunOperation = defineOperation({
  name: 'launchProjectRun',
  summary: 'Launch a pipeline of this project (the alternate launch route). 202 with the queued run.',
  access: { ...launchAuth, project: true },
  effect: 'write',
  input: { params: idParams('project_id'), body: launchBody },
  idempotent: true,
  output: { 202: { description: 'The run, queued', schema: runResponse } },
  async run(ctx: OperationContext, { body }: RequestInput<{ project_id: string }, Record<string, never>, { pipelineId: string }>): Promise<Reply> {
    return { status: 202, body: { run: await launchRun(ctx, body.pipelineId) } };
  },
});

export const listProjectRunsOperation = defineOperation({
  name: 'listProjectRuns',
  summary: 'Runs of this project\'s pipelines, newest first, filtered by status and pipelineId.',
  access: { ...listAuth, project: true },
  effect: 'read',
  input: { params: idParams('project_id'), query: projectRunsQuery },
  output: { 200: { description: 'A page of runs', schema: listResponse('runs', runSummarySchema) } },
  async run(ctx: OperationContext, { query }: RequestInput<{ project_id: string }, RunsQuery, undefined>): Promise<Reply> {
    const { limit, offset, ...filter } = query;
    return { body: await listRuns(ctx, { limit, offset }, { ...filter, project: ctx.project }) };
  },
});

export const getProjectRunOperation = defineOperation({
  name: 'getProjectRun',
  summary: 'One run of a pipeline of this project: status, per-node results (live while running), error evidence and its Temporal workflow.',
  access: { ...detailAuth, project: true },
  effect: 'read',
  input: { params: idParams('project_id', 'run_id') },
  output: { 200: { description: 'The run', schema: runResponse } },
  async run(ctx: OperationContext, { params }: RequestInput<{ project_id: string; run_id: string }, Record<string, never>, undefined>): Promise<Reply> {
    return { body: { run: await getRun(ctx, params.run_id, ctx.project) } };
  },
});

export const launchRunOperation = defineOperation({
  name: 'launchRun',
  summary: 'Launch a pipeline by id (its project must be in the key\'s allowlist). 202 with the queued run.',
  access: launchAuth,
  effect: 'write',
  input: { body: launchBody },
  idempotent: true,
  output: { 202: { description: 'The run, queued', schema: runResponse } },
  async run(ctx: OperationContext, { body }: RequestInput<Record<string, string>, Record<string, never>, { pipelineId: string }>): Promise<Reply> {
    const project = await projectOfPipeline(ctx, body.pipelineId);
    return { status: 202, body: { run: await launchRun(ctx, body.pipelineId, project) } };
  },
});

export const listRunsOperation = defineOperation({
  name: 'listRuns',
  summary: 'Runs across the projects the key may use, newest first, filtered by status, pipelineId and projectId.',
  access: listAuth,
  effect: 'read',
  input: { query: runsQuery },
  output: { 200: { description: 'A page of runs', schema: listResponse('runs', runSummarySchema) } },
  async run(ctx: OperationContext, { query }: RequestInput<Record<string, string>, RunsQuery & { projectId?: string }, undefined>): Promise<Reply> {
    const { limit, offset, projectId, ...filter } = query;
    const project = projectId ? await requireProject(ctx.deps, ctx.db, ctx.principal, projectId) : undefined;
    return { body: await listRuns(ctx, { limit, offset }, { ...filter, project }) };
  },
});

export const getRunOperation = defineOperation({
  name: 'getRun',
  summary: 'One run, in a project the key may use.',
  access: detailAuth,
  effect: 'read',
  input: { params: idParams('run_id') },
  output: { 200: { description: 'The run', schema: runResponse } },
  async run(ctx: OperationContext, { params }: RequestInput<{ run_id: string }, Record<string, never>, undefined>): Promise<Reply> {
    return { body: { run: await getRun(ctx, params.run_id) } };
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

type OneRun = { project_id: string; run_id: string };

export const cancelRunOperation = defineOperation({
  name: 'cancelRun',
  summary: 'Cancel a queued or running run: it ends canceled with nothing committed. A run that already ended is returned as it is.',
  // Both: canceling is launching's counterpart, and the answer is the run.
  access: { scopes: { allOf: ['pipelines:execute', 'runs:read'] }, project: true, actor: 'accountable' },
  effect: 'write',
  input: { params: idParams('project_id', 'run_id') },
  output: { 200: { description: 'The run, canceled, or as it ended', schema: runResponse } },
  idempotent: true,
  async run(ctx: OperationContext, { params }: RequestInput<OneRun, Record<string, never>, undefined>): Promise<Reply> {
    await getRun(ctx, params.run_id, ctx.project); // the run must belong to the project
    return { body: { run: await cancelRun(ctx, params.run_id) } };
  },
});

/** Making, pausing and deleting a pipeline's schedules: who may launch it, as the member or key accountable for its launches. */
const scheduleChanges = { scopes: { anyOf: ['pipelines:execute'] }, project: true, actor: 'accountable' } as const;

type OnePipeline = { project_id: string; pipeline_id: string };
type OneSchedule = OnePipeline & { schedule_id: string };
const scheduleParams = idParams('project_id', 'pipeline_id', 'schedule_id');
const scheduleResponse = { type: 'object', required: ['schedule'], properties: { schedule: pipelineScheduleSchema } };

export const createPipelineScheduleOperation = defineOperation({
  name: 'createPipelineSchedule',
  summary: 'Launch the pipeline on a Temporal Schedule (every intervalSeconds, or on a cron in UTC).',
  access: scheduleChanges,
  effect: 'write',
  input: { params: pipelineParams, body: schedulePlanBody },
  output: { 200: { description: 'The schedule, made', schema: scheduleResponse } },
  idempotent: true,
  async run(ctx: OperationContext, { params, body }: RequestInput<OnePipeline, Record<string, never>, ScheduleSpecInput>): Promise<Reply> {
    return { body: { schedule: await createPipelineSchedule(ctx, params.pipeline_id, body) } };
  },
});

export const listPipelineSchedulesOperation = defineOperation({
  name: 'listPipelineSchedules',
  summary: 'The pipeline’s schedules.',
  access: { scopes: { anyOf: ['pipelines:read'] }, project: true },
  effect: 'read',
  input: { params: pipelineParams },
  output: { 200: { description: 'The pipeline’s schedules, oldest first', schema: { type: 'object', required: ['schedules'], properties: { schedules: { type: 'array', items: pipelineScheduleSchema } } } } },
  async run(ctx: OperationContext, { params }: RequestInput<OnePipeline, Record<string, never>, undefined>): Promise<Reply> {
    return { body: { schedules: await listPipelineSchedules(ctx, params.pipeline_id) } };
  },
});

export const updatePipelineScheduleOperation = defineOperation({
  name: 'updatePipelineSchedule',
  summary: 'Pause or resume a schedule of the pipeline: paused, it launches nothing.',
  access: scheduleChanges,
  effect: 'write',
  input: { params: scheduleParams, body: scheduleStateBody },
  output: { 200: { description: 'The schedule, paused or resumed', schema: scheduleResponse } },
  idempotent: true,
  async run(ctx: OperationContext, { params, body }: RequestInput<OneSchedule, Record<string, never>, { paused: boolean }>): Promise<Reply> {
    return { body: { schedule: await setPipelineSchedulePaused(ctx, params.pipeline_id, params.schedule_id, body.paused) } };
  },
});

export const deletePipelineScheduleOperation = defineOperation({
  name: 'deletePipelineSchedule',
  summary: 'Delete a schedule of the pipeline. Runs it launched stay.',
  access: scheduleChanges,
  effect: 'write',
  input: { params: scheduleParams },
  output: { 200: { description: 'The schedule is gone', schema: { type: 'object', required: ['deleted', 'scheduleId'], properties: { deleted: { const: true }, scheduleId: uuid } } } },
  idempotent: true,
  async run(ctx: OperationContext, { params }: RequestInput<OneSchedule, Record<string, never>, undefined>): Promise<Reply> {
    await deletePipelineSchedule(ctx, params.pipeline_id, params.schedule_id);
    return { body: { deleted: true, scheduleId: params.schedule_id } };
  },
});

export const toolOnlyRunOperations = [cancelRunOperation, createPipelineScheduleOperation, listPipelineSchedulesOperation, updatePipelineScheduleOperation, deletePipelineScheduleOperation];
